"""When two points differ beyond run-to-run noise: the coefficient of variation over a point's repeats,
and the verdict on a change between two points (the version deltas and the prefix-caching pairs)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

# A change is beyond run-to-run noise when it exceeds NOISE_CV_FACTOR times the larger coefficient of
# variation of the two points' repeats, and at least NOISE_FLOOR (points with one repeat have no CV of
# their own).
NOISE_CV_FACTOR = 2.0
NOISE_FLOOR = 0.05


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation over mean; None with fewer than two repeats (nothing to compare)."""
    if len(values) < 2 or not statistics.fmean(values):
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def noise_threshold(cv_a: float | None, cv_b: float | None) -> float:
    """The relative change within which two points are the same (see NOISE_CV_FACTOR)."""
    return max(NOISE_FLOOR, NOISE_CV_FACTOR * max(cv_a or 0.0, cv_b or 0.0))


def noise_words() -> dict[str, str]:
    """The rule's figures as a section of the page writes them: `noise_floor` "5%", `noise_factor` "2"."""
    return {"noise_floor": f"{NOISE_FLOOR:.0%}", "noise_factor": f"{NOISE_CV_FACTOR:g}"}


def judged(metric: str, before: dict[str, Any], after: dict[str, Any], worse_when: int) -> dict[str, Any]:
    """The change of `metric` from point `before` to point `after` (`<metric>_change`, relative), the noise
    limit of the two points' CVs over repeats (`<metric>_noise_limit`, see NOISE_CV_FACTOR) and the verdict
    (`<metric>_verdict`): "within noise", or beyond it "regression" when the change has the sign of
    `worse_when` (+1: higher is worse, a latency; -1: lower is worse, a throughput), else "improvement".
    Every key is there, None when there is nothing to compare: tables take their columns from row 1."""
    old, new = before.get(metric), after.get(metric)
    names = (f"{metric}_change", f"{metric}_noise_limit", f"{metric}_verdict")
    if not old or new is None:
        return dict.fromkeys(names)
    change = (new - old) / old
    limit = noise_threshold(before.get(f"{metric}_cv"), after.get(f"{metric}_cv"))
    if abs(change) <= limit:
        verdict = "within noise"
    else:
        verdict = "regression" if change * worse_when > 0 else "improvement"
    return dict(zip(names, (change, limit, verdict), strict=True))
