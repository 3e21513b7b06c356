"""The lake's maintenance task bodies: compaction (`accelbench_compact_lake`)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from accelbench.airflow.tasks.common import fail_on_library_error
from accelbench.lake.compaction import compact
from accelbench.lake.store import Lake


@fail_on_library_error
def compact_lake(params: dict[str, Any], today: date | None = None) -> dict[str, Any]:
    """`accelbench.lake.compaction.compact` of the run's `tables`, up to `skip_days` days ago; per table, the
    partitions compacted, the files they held, the rows and the re-landed files kept (the run's XCom)."""
    newest = (today or datetime.now(UTC).date()) - timedelta(days=int(params.get("skip_days", 2)))
    done = compact(Lake.from_env(), params["tables"], newest)
    return {table: asdict(counts) for table, counts in done.items()}
