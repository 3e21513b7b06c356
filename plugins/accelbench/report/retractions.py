"""Retracted runs: the catalog's retractions, and the runs they take out of the report."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from accelbench.lake.schemas import LakeRow


@dataclass(frozen=True)
class Retraction:
    run_id: str
    reason: str
    superseded_by: str | None


def split_retracted(
    runs: Iterable[LakeRow], retractions: Iterable[Retraction]
) -> tuple[list[LakeRow], list[LakeRow]]:
    """(kept, retracted): retracted runs leave the default report and are listed with why."""
    by_id = {r.run_id: r for r in retractions}
    kept, gone = [], []
    for run in runs:
        r = by_id.get(run["run_id"])
        if r is None:
            kept.append(run)
        else:
            gone.append(run | {"retraction_reason": r.reason, "superseded_by": r.superseded_by})
    return kept, gone
