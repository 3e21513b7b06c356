"""Lake `runs` (and a search's `capacities`) rows of a spec, written straight into a lake: what "already
measured" reads."""

from __future__ import annotations

import pyarrow as pa
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.schemas import CAPACITIES, RUNS
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


def land_search(lake: Lake, spec: BenchmarkSpec, outcome: str = "capacity", probes: int = 3) -> list[str]:
    """A load search of `spec` as another campaign left it: its probes in `runs` (one repeat each) and its
    row in `capacities`, with `outcome`. Returns the probes' run ids."""
    run = "manual__earlier"
    runs = [
        {
            "run_id": f"{spec.spec_id}/p{step}",
            "spec_id": spec.spec_id,
            "dag_run_id": run,
            "matrix_key": spec.matrix_key,
            "level_kind": "concurrency",
            "level_value": float(2**step),
            "repeat": 0,
            "status": "ok",
            "search_step": step,
            "search_phase": "bracket",
        }
        for step in range(probes)
    ]
    found = outcome in ("capacity", "upper_bound")
    row = {"spec_id": spec.spec_id, "dag_run_id": run, "matrix_key": spec.matrix_key, "outcome": outcome}
    row |= {"capacity": float(2 ** (probes - 1)) if found else None, "probes": probes}
    lake.write_table("runs", pa.Table.from_pylist(runs, schema=RUNS), "cpu", "2026-11-30", spec.spec_id)
    lake.write_table(
        "capacities", pa.Table.from_pylist([row], schema=CAPACITIES), "cpu", "2026-11-30", spec.spec_id
    )
    return [r["run_id"] for r in runs]
