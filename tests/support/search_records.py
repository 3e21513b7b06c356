"""A search's level records as a stand-in server would leave them: a p99 TTFT under the SLO up to a capacity,
over it above, for the driver tests that replace the real client."""

from __future__ import annotations

import json
from pathlib import Path

from accelbench.core.evidence import LevelRecord
from accelbench.core.levels import Level

CAPACITY = 5  # the stand-in server meets a p99 TTFT limit between 40 and 90 ms up to this concurrency


def level_record(spec_dir: Path, level: Level, repeat: int, status: str = "ok") -> LevelRecord:
    """One repeat of `level`: its result file (p99 TTFT 40 ms up to CAPACITY, 90 ms above) and its record; a
    failed one completed 3 requests before the server died."""
    name = f"{level.key}-r{repeat}"
    p99 = 40.0 if level.value <= CAPACITY else 90.0
    (spec_dir / f"{name}.json").write_text(json.dumps({"p99_ttft_ms": p99, "duration": 2.0}))
    return LevelRecord(
        f"c/s/{name}",
        level.kind,
        level.value,
        repeat,
        0,
        status,  # type: ignore[arg-type]
        result_file=f"{name}.json",
        client_completed=100 if status == "ok" else 3,
        client_failed=0,
        client_limited=False,
        error="server died during the level" if status == "failed" else None,
    )
