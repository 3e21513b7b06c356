"""What the lake already holds for a matrix: "this version was already measured with this matrix"."""

from __future__ import annotations

import pyarrow.dataset as ds

from accelbench.core.levels import levels
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.schemas import MEASURED_STATUSES
from accelbench.lake.store import Lake


def measured_specs(
    lake: Lake, specs: list[BenchmarkSpec], retracted: set[str] | frozenset[str] = frozenset()
) -> list[BenchmarkSpec]:
    """The specs whose every level x repeat already has a measured (MEASURED_STATUSES), unretracted run
    in the lake, from any campaign, for the same server (version and image included) and load:
    `matrix_key`. A load search's spec is never among them."""
    if not specs:
        return []
    keys = sorted({s.matrix_key for s in specs})
    rows = lake.read(
        "runs",
        where=ds.field("matrix_key").isin(keys) & ds.field("status").isin(MEASURED_STATUSES),
        columns=["run_id", "matrix_key", "level_kind", "level_value", "repeat"],
    ).to_pylist()
    have = {
        (r["matrix_key"], r["level_kind"], r["level_value"], r["repeat"])
        for r in rows
        if r["run_id"] not in retracted
    }
    return [
        spec
        for spec in specs
        # A search's loads are not known before it runs: it has no levels to find (an empty set would be
        # "measured" by any lake), so it is never already measured.
        if spec.load.search is None
        and {
            (spec.matrix_key, level.kind, float(level.value), repeat)
            for level in levels(spec)
            for repeat in range(spec.load.repeats)
        }
        <= have
    ]
