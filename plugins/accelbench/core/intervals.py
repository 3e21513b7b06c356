"""95% intervals for the suite's figures, and the three-valued SLO verdict they give.

One source for every interval the report shows and the load search judges by:

- `mean_interval`: a Student t interval over repeats (throughput, a repeat-level figure).
- `quantile_interval`: a latency quantile within one repeat, from its order statistics: distribution-free
  (Hutson's fractional order statistics, so the coverage is close to nominal instead of the 96-98% of
  whole ranks). Too few requests for one side (p99 of 200 requests has no upper bound at 95%): that
  side is None, the other side is one-sided at the full confidence, and `method` says so.
- `pooled_quantile_interval`: a quantile over repeats whose distributions differ (the host's speed moves
  between repeats): a t interval over the repeats' log quantiles (each median-unbiased). It covers the
  *median repeat's quantile* (a repeat at the host's median speed), and its coverage
  holds for 2, 3 and 5 repeats where a bootstrap over repeats does not (`benchmarks/interval_coverage.py`,
  figures in benchmarks/RESULTS.md).

numpy at import; scipy is imported by the functions that use it (DAG files import `accelbench.core`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from accelbench.core.sketches import Distribution

CONFIDENCE = 0.95
LOG_SCALE = "(log scale)"  # the end of a method computed on logs (`pooled_quantile_interval`)
MAX_REPEATS = 1000  # how far `factor_to_decide` counts repeats before taking the normal limit

SloVerdict = Literal["meets", "misses", "undecided"]
# One repeat's requests: their values, or their distribution as the lake keeps it (`accelbench.core.sketches`:
# exact, or a DDSketch whose bins hold each order statistic, which widens a bound to its bin's end).
Sample = ArrayLike | Distribution


def as_distribution(sample: Sample) -> Distribution:
    """A repeat's distribution: itself, or its values kept exactly."""
    return sample if isinstance(sample, Distribution) else Distribution.exact_of(sample)


def sketch_note(dists: Sequence[Distribution]) -> str:
    """What a method adds when some of its repeats are sketches ("" when all are exact)."""
    accuracies = sorted({d.relative_accuracy for d in dists if d.relative_accuracy is not None})
    if not accuracies:
        return ""
    return f"; from DDSketches (values within {accuracies[-1]:.1%}), bounds widened to their bins' ends"


@dataclass(frozen=True)
class Interval:
    """A figure with its interval. A None bound is unknown or unbounded on that side (too few samples);
    `method` is the few words the page shows beside it."""

    estimate: float | None
    low: float | None
    high: float | None
    confidence: float
    method: str

    def straddles(self, limit: float) -> bool:
        """Whether `limit` may be the true value: low <= limit <= high, a missing bound counting as open."""
        return (self.low is None or self.low <= limit) and (self.high is None or limit <= self.high)

    @property
    def half_width_ratio(self) -> float | None:
        """(high - low) / 2 / estimate: the relative precision, None when a bound is missing."""
        if self.low is None or self.high is None or not self.estimate:
            return None
        return (self.high - self.low) / 2 / abs(self.estimate)


@lru_cache(maxsize=256)
def t_quantile(confidence: float, df: int) -> float:
    """Student t's two-sided quantile: cached, as a report asks for the same few thousands of times."""
    from scipy import stats

    return float(stats.t.ppf((1 + confidence) / 2, df))


def _check_quantile(q: float) -> None:
    """The minimum and maximum have no order-statistic interval (nothing lies beyond them)."""
    if not 0 < q < 1:
        raise ValueError(f"q={q}: a quantile strictly between 0 and 1")


def _unknown(estimate: float | None, confidence: float, method: str) -> Interval:
    return Interval(estimate, None, None, confidence, method)


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Student t interval for the mean over repeats; fewer than 2 values: no bounds (no spread to judge)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return _unknown(None, confidence, "no repeats")
    mean = float(x.mean())
    if x.size == 1:
        return _unknown(mean, confidence, "1 repeat: no interval")
    half = t_quantile(confidence, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return Interval(mean, mean - half, mean + half, confidence, f"t interval over {x.size} repeats")


@lru_cache(maxsize=4096)
def order_ranks(n: int, q: float, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """The fractional order-statistic ranks (1-based) of the interval for the q-quantile of n samples.

    Hutson (1999): the r-th fractional order statistic of uniforms is Beta(r, n + 1 - r), so a rank r with
    P(U_(r) > q) = alpha/2 bounds below; scipy's continuous binomial inverse (bdtrik) gives r directly.
    A side that needs a rank beyond the sample is None and the other side takes the whole alpha."""
    from scipy.special import bdtrik

    _check_quantile(q)
    if n < 1:
        return None, None
    alpha = 1 - confidence
    low = 1 + float(bdtrik(alpha / 2, n, q)) if (1 - q) ** n <= alpha / 2 else None
    high = 1 + float(bdtrik(1 - alpha / 2, n, q)) if q**n <= alpha / 2 else None
    if low is None and high is not None:
        high = 1 + float(bdtrik(1 - alpha, n, q)) if q**n <= alpha else None
    elif high is None and low is not None:
        low = 1 + float(bdtrik(alpha, n, q)) if (1 - q) ** n <= alpha else None
    return low, high


def min_requests(q: float, confidence: float = CONFIDENCE) -> int:
    """The fewest requests of one repeat whose order statistics bound the q-quantile on both sides
    (p99 at 95%: 368): below it the page can only say "at least"."""
    _check_quantile(q)
    alpha = 1 - confidence
    return math.ceil(math.log(alpha / 2) / math.log(max(q, 1 - q)))


def _at_rank(ordered: NDArray[np.float64], rank: float | None) -> NDArray[np.float64] | None:
    """The fractional order statistic at 1-based `rank` along the last axis (linear between neighbours)."""
    if rank is None:
        return None
    below = min(max(math.floor(rank), 1), ordered.shape[-1])
    above = min(below + 1, ordered.shape[-1])
    frac = rank - below
    result: NDArray[np.float64] = ordered[..., below - 1] * (1 - frac) + ordered[..., above - 1] * frac
    return result


def quantile_bounds(
    samples: NDArray[np.float64], q: float, confidence: float = CONFIDENCE
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.float64] | None]:
    """Estimate, low and high of the q-quantile along the last axis of equal-length samples: the
    vectorised form of `quantile_interval`, for the benchmark and the tests."""
    ordered = np.sort(samples, axis=-1)
    low_rank, high_rank = order_ranks(ordered.shape[-1], q, confidence)
    estimate = np.quantile(ordered, q, axis=-1)
    return estimate, _at_rank(ordered, low_rank), _at_rank(ordered, high_rank)


def quantile_interval(samples: Sample, q: float, confidence: float = CONFIDENCE) -> Interval:
    """Distribution-free interval for the q-quantile of one repeat's requests (fractional order
    statistics); the estimate is numpy's linear quantile, as vLLM reports its percentiles. From a sketch,
    each bound is the end of the bin holding its order statistic (so it holds the exact path's bound)."""
    _check_quantile(q)
    dist = as_distribution(samples)
    if dist.count == 0:
        return _unknown(None, confidence, "no requests")
    if dist.values is not None:
        estimate, low, high = quantile_bounds(dist.values, q, confidence)
    else:
        low_rank, high_rank = order_ranks(dist.count, q, confidence)
        estimate = np.asarray(dist.quantile(q))
        low = None if low_rank is None else dist.at_position(low_rank, "low")
        high = None if high_rank is None else dist.at_position(high_rank, "high")
    method = f"order statistics, {dist.count} requests"
    if low is None or high is None:
        need = min_requests(q, confidence)
        side = (
            "no bounds"
            if low is None and high is None
            else "no upper bound"
            if high is None
            else "no lower bound"
        )
        method += f"; {side} below {need} requests"
    return Interval(
        float(estimate),
        None if low is None else float(low),
        None if high is None else float(high),
        confidence,
        method + sketch_note([dist]),
    )


def repeat_quantiles(groups: Sequence[Sample], q: float) -> NDArray[np.float64]:
    """Each repeat's q-quantile, median-unbiased (Hyndman and Fan's type 8): the estimate is as likely
    above the repeat's true quantile as below, where numpy's default sits low for a tail quantile of a few
    hundred requests, which a t interval over 5 repeats would turn into 85% coverage instead of 95%."""
    dists = [as_distribution(g) for g in groups]
    return np.array([d.quantile(q, "median_unbiased") for d in dists if d.count])  # a sketch's: within 0.1%


def pooled_quantile_interval(
    groups: Sequence[Sample],
    q: float,
    confidence: float = CONFIDENCE,
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """The q-quantile over repeats whose speed differs: a t interval over the repeats' log quantiles,
    covering the median repeat's quantile (the geometric mean of the repeats' quantiles is the estimate).

    The spread between repeats already holds each repeat's sampling error, so no within-repeat term is
    added; logs because the host's noise scales latencies (one repeat 1.7x slower), which keeps the bounds
    positive (a quantile <= 0, a TPOT of one-token outputs, falls back to the linear scale). With 2 repeats
    the t quantile is 12.7: the interval is wide because 2 repeats say little about the next one. A
    bootstrap over repeats then requests, the issue's first idea, covers 49-90% with 2-3 repeats (see
    benchmarks/interval_coverage.py), so it is not used: `resamples` and `seed` are accepted for callers
    written to it and ignored. One group: `quantile_interval`. Repeats held as sketches: each quantile is
    within the sketch's relative accuracy a of the exact one, so the bounds move out by a factor 1 / (1 + a)
    below and 1 / (1 - a) above (their mean log is off by no more than each one's), unless their percentile
    is stored exactly with them (the lake's p50/p90/p95/p99: `Distribution.stored`)."""
    del resamples, seed
    _check_quantile(q)
    dists = [d for d in map(as_distribution, groups) if d.count]
    if not dists:
        return _unknown(None, confidence, "no requests")
    if len(dists) == 1:
        return quantile_interval(dists[0], q, confidence)
    quantiles = repeat_quantiles(dists, q)
    approximate = [d for d in dists if d.stored(q) is None]  # a stored percentile is exact (core.sketches)
    accuracy = max((d.relative_accuracy or 0.0 for d in approximate), default=0.0)
    note = sketch_note(approximate)
    k = quantiles.size
    t = t_quantile(confidence, k - 1)
    log = bool((quantiles > 0).all())
    values = np.log(quantiles) if log else quantiles
    centre, half = float(values.mean()), t * float(values.std(ddof=1)) / math.sqrt(k)
    if not log:
        method = f"t interval over {k} repeats' quantiles{note}"
        low, high = centre - half, centre + half
        return Interval(centre, low - abs(low) * accuracy, high + abs(high) * accuracy, confidence, method)
    method = f"t interval over {k} repeats' quantiles {LOG_SCALE}{note}"
    low, high = math.exp(centre - half) / (1 + accuracy), math.exp(centre + half) / (1 - accuracy)
    return Interval(math.exp(centre), low, high, confidence, method)


def widened(estimate: float | None, bound: float, widen: float) -> float:
    """`bound` moved out from `estimate` by `widen` (log scale, signed: negative for a low bound), in
    quadrature with its own distance from it (two independent errors of one log figure: a run's own
    requests, and the host's run-to-run spread the requests cannot show)."""
    if not widen or estimate is None or estimate <= 0 or bound <= 0:
        return bound
    own = math.log(bound / estimate)
    return estimate * math.exp(math.copysign(math.hypot(own, widen), widen))


def slo_verdict(
    interval: Interval, limit: float | None, *, higher_is_worse: bool = True
) -> SloVerdict | None:
    """meets when the whole interval is on the right side of `limit`, misses when it is wholly on the wrong
    side, otherwise (limit inside, or the side that would decide it unknown) undecided; None without a
    limit. A bound equal to the limit meets it, as a value equal to the limit does (`core.slos`)."""
    if limit is None:
        return None
    if higher_is_worse:
        if interval.high is not None and interval.high <= limit:
            return "meets"
        if interval.low is not None and interval.low > limit:
            return "misses"
        return "undecided"
    if interval.low is not None and interval.low >= limit:
        return "meets"
    if interval.high is not None and interval.high < limit:
        return "misses"
    return "undecided"


def factor_to_decide(interval: Interval, limit: float, *, repeats: int | None = None) -> float | None:
    """How many times the present measurement would leave `limit` outside the interval, the estimate and
    spread staying as measured: <= 1 when decided already, None when the estimate is at the limit or a
    bound is unknown. Without `repeats` (requests per repeat for one repeat's order statistics) the
    half-width shrinks as 1/sqrt(amount). With `repeats`, the interval is a t interval over that many
    repeats (`mean_interval`, `pooled_quantile_interval`): the factor is in repeats and counts the t
    quantile falling too (2 repeats: 12.7; 4: 3.2), which 1/sqrt alone would overstate up to 10-fold."""
    if interval.estimate is None or interval.low is None or interval.high is None:
        return None
    distance = abs(interval.estimate - limit)
    if distance == 0:
        return None
    side = (
        interval.high - interval.estimate if limit > interval.estimate else interval.estimate - interval.low
    )
    if repeats is None or repeats < 2:
        return float((side / distance) ** 2)
    from scipy import stats

    if interval.method.endswith(LOG_SCALE) and min(interval.estimate, interval.low, limit) > 0:
        distance, side = abs(math.log(interval.estimate / limit)), math.log(interval.high / interval.estimate)
    spread = side * math.sqrt(repeats) / t_quantile(interval.confidence, repeats - 1)
    counts = np.arange(2, MAX_REPEATS + 1)
    halves = stats.t.ppf((1 + interval.confidence) / 2, counts - 1) * spread / np.sqrt(counts)
    enough = counts[halves <= distance]
    if enough.size:
        return float(enough[0]) / repeats
    z = float(stats.norm.ppf((1 + interval.confidence) / 2))
    return (z * spread / distance) ** 2 / repeats
