"""The lake's maintenance task bodies: compaction (`accelbench_compact_lake`)."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta
from typing import Any

from accelbench.airflow.tasks.common import fail_on_library_error
from accelbench.lake.compaction import compact_partition, partitions
from accelbench.lake.store import Lake

log = logging.getLogger(__name__)


@fail_on_library_error
def compact_lake(params: dict[str, Any], today: date | None = None) -> dict[str, Any]:
    """Every partition of `params["tables"]` of more than one file, older than `skip_days` days, compacted;
    a count per table of the partitions compacted, the files they held and the rows."""
    lake = Lake.from_env()
    newest = (today or datetime.now(UTC).date()) - timedelta(days=int(params.get("skip_days", 2)))
    done: dict[str, dict[str, int]] = {}
    for table in params["tables"]:
        counts = {"partitions": 0, "files": 0, "rows": 0, "kept": 0}
        for partition in partitions(lake, table):
            day = date.fromisoformat(partition.rsplit("date=", 1)[1])
            if day > newest:
                log.info("%s/%s: within the last days, left alone", table, partition)
                continue
            result = compact_partition(lake, table, partition)
            if result.written:
                counts["partitions"] += 1
                counts["files"] += result.inputs
                counts["rows"] += result.rows
                counts["kept"] += len(result.kept)
        log.info("%s: %s", table, counts)
        done[table] = counts
    return done
