"""What the lake already holds for a matrix: "this version was already measured with this matrix"."""

from __future__ import annotations

import pyarrow.dataset as ds

from accelbench.core.levels import levels
from accelbench.core.search_plan import SETTLED_OUTCOMES
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.schemas import MEASURED_STATUSES
from accelbench.lake.store import Lake


def measured_specs(
    lake: Lake, specs: list[BenchmarkSpec], retracted: set[str] | frozenset[str] = frozenset()
) -> list[BenchmarkSpec]:
    """The specs whose every level x repeat already has a measured (MEASURED_STATUSES), unretracted run
    in the lake, from any campaign, for the same server (version and image included) and load:
    `matrix_key`. A load search's spec counts once a search with its matrix_key settled
    (`searched_keys`)."""
    if not specs:
        return []
    searched = searched_keys(lake, [s for s in specs if s.load.search is not None], retracted)
    keys = sorted({s.matrix_key for s in specs})
    rows = lake.read(
        "runs",
        where=ds.field("matrix_key").isin(keys) & ds.field("status").isin(MEASURED_STATUSES),
        columns=["run_id", "matrix_key", "level_kind", "level_value", "repeat", "recheck"],
    ).to_pylist()
    have = {
        (r["matrix_key"], r["level_kind"], r["level_value"], r["repeat"])
        for r in rows
        if r["run_id"] not in retracted and not r["recheck"]  # a recheck is not one of the level's repeats
    }
    return [
        spec
        for spec in specs
        # A search's loads are not known before it runs: it has no levels to find (an empty set would be
        # "measured" by any lake); its capacities row says it ran.
        if spec.matrix_key in searched
        or (
            spec.load.search is None
            and {
                (spec.matrix_key, level.kind, float(level.value), repeat)
                for level in levels(spec)
                for repeat in range(spec.load.repeats)
            }
            <= have
        )
    ]


def searched_keys(
    lake: Lake, specs: list[BenchmarkSpec], retracted: set[str] | frozenset[str] = frozenset()
) -> set[str]:
    """The matrix keys of `specs` whose search settled (`SETTLED_OUTCOMES`: an answer, or a stop the same
    spec would meet again, client-limited or untrusted) in `capacities`, none of whose probes was
    retracted. A search stopped by a failed probe may find its answer next time: it is run again."""
    keys = sorted({s.matrix_key for s in specs})
    if not keys:
        return set()
    found = lake.read(
        "capacities",
        where=ds.field("matrix_key").isin(keys) & ds.field("outcome").isin(SETTLED_OUTCOMES),
        columns=["matrix_key", "spec_id", "dag_run_id"],
    ).to_pylist()
    if not found or not retracted:
        return {row["matrix_key"] for row in found}
    probes = lake.read(
        "runs",
        where=ds.field("matrix_key").isin(keys) & ds.field("search_step").is_valid(),
        columns=["run_id", "spec_id", "dag_run_id"],
    ).to_pylist()
    touched = {(r["spec_id"], r["dag_run_id"]) for r in probes if r["run_id"] in retracted}
    return {row["matrix_key"] for row in found if (row["spec_id"], row["dag_run_id"]) not in touched}
