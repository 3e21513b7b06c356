"""Lake `runs` rows of a spec, written straight into a lake: what "already measured" reads."""

from __future__ import annotations

import pyarrow as pa
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.schemas import RUNS
from accelbench.lake.store import Lake


def land_runs(
    lake: Lake,
    spec: BenchmarkSpec,
    levels: list[int] | None = None,
    repeats: int | None = None,
    status: str = "ok",
) -> None:
    """`levels` x `repeats` runs of `spec` (default: its own levels and repeats) with `status`, as
    another campaign would have left them."""
    rows = [
        {
            "run_id": f"{spec.spec_id}/c{c}-r{r}",
            "matrix_key": spec.matrix_key,
            "level_kind": "concurrency",
            "level_value": float(c),
            "repeat": r,
            "status": status,
            "instance_type": spec.server.instance_type,
        }
        for c in (spec.load.concurrency if levels is None else levels)
        for r in range(spec.load.repeats if repeats is None else repeats)
    ]
    lake.write_table("runs", pa.Table.from_pylist(rows, schema=RUNS), "cpu", "2026-11-30", spec.spec_id)
