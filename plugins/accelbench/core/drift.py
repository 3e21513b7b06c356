"""Whether the host drifted under a run: one load measured at the start and again at the end, compared.

A within-run interval knows only its own requests, not how one host's runs differ (the README demo's two
repeats of one level: 1.71x in p50 TTFT), so the two measurements drift only when their intervals lie
more than DRIFT_FACTOR apart. The load search rechecks its first probe (`accelbench.search`), a
campaign of fixed levels its first level (`accelbench.loadgen.driver`); a drifted run's figures are
published as undecided, never as the server's."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from accelbench.core.intervals import Interval, pooled_quantile_interval

DRIFT_QUANTILES = (0.5, 0.99)  # what is compared: the median (bounded from a few requests) and p99
DRIFT_FACTOR = 2.0  # how far apart beyond both intervals


def figure_ms(interval: Interval) -> str:
    """ "212 ms [190, 240]": an interval of milliseconds as the drift and search texts say it."""
    ends = ", ".join("-" if v is None else f"{v:.0f}" for v in (interval.low, interval.high))
    return f"{interval.estimate:.0f} ms [{ends}]"


def apart(before: Interval, after: Interval, factor: float = DRIFT_FACTOR) -> bool:
    """One interval's low bound over `factor` x the other's high bound, either way."""
    return (before.high is not None and after.low is not None and after.low > factor * before.high) or (
        after.high is not None and before.low is not None and before.low > factor * after.high
    )


def drift(metric: str, where: str, before: Sequence[ArrayLike], after: Sequence[ArrayLike]) -> str | None:
    """Whether `metric`'s requests at the start (`before`, one array per repeat) and at the end (`after`)
    disagree: the p50 or p99 intervals (`pooled_quantile_interval` over each side's repeats) lie more
    than DRIFT_FACTOR apart. Intervals that far apart of one quantity that changed less than that happen
    well under 1% of the time (each misses on its far side with 2.5%). The text names both figures
    ("the host drifted: p50 TTFT at 1 concurrent was 21 ms [20, 22] at the start, 64 ms [60, 70] at the
    end"); None when they agree or either side cannot be bounded."""
    for q in DRIFT_QUANTILES:
        start, end = (
            pooled_quantile_interval([np.asarray(r, dtype=float) for r in side], q)
            for side in (before, after)
        )
        if start.estimate is None or end.estimate is None or not apart(start, end):
            continue
        return (
            f"the host drifted: p{round(q * 100)} {metric} at {where} was {figure_ms(start)} at the start, "
            f"{figure_ms(end)} at the end"
        )
    return None
