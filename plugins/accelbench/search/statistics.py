"""The load search's statistics under the interval rule: the capacity fitted from every probe together
(`fit_capacity`), the host's run-to-run spread the recheck shows (`host_spread`), drift between two
measurements of one load (`probe_drift`, `repeats_drift`) and over-saturation (`saturation`). See
`accelbench.search.load_search` for the rule and the algorithm."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from accelbench.core.drift import drift
from accelbench.core.intervals import pooled_quantile_interval
from accelbench.core.search_plan import TAIL_LIMITS, CapacityFit, Probe, ProbeResult, RepeatResult, SearchPlan
from accelbench.core.slos import Limit


def fit_capacity(plan: SearchPlan, probes: Sequence[Probe], host_sd: float = 0.0) -> CapacityFit | None:
    """The `CapacityFit` of the probes with intervals (None under the point rule, or none measured).
    `host_sd`: the host's run-to-run spread of a latency on the log scale (`host_spread`), which a
    probe's within-run interval does not hold: each bound is moved out by it, in quadrature with the
    interval's own half-width on the log scale (two independent errors of one log figure)."""
    from scipy.stats import norm  # scipy at call time: DAG files import accelbench.core

    widen = float(norm.ppf(0.975)) * host_sd
    judged = [p for p in probes if p.bounds]
    if not judged:
        return None
    judged.sort(key=lambda p: p.load)
    loads = np.array([p.load for p in judged])
    weights = np.array([max(p.requests, 1) for p in judged], dtype=float)
    ends: list[tuple[float | None, float | None, float | None]] = []
    for metric in sorted({b.metric for p in judged for b in p.bounds}):
        rows = [(i, b) for i, p in enumerate(judged) for b in p.bounds if b.metric == metric]
        at, limit = loads[[i for i, _ in rows]], rows[0][1].limit
        w = weights[[i for i, _ in rows]]
        # A bound the requests could not give: the high one unbounded (never "sure to meet"), the low one 0.
        estimate = fitted([b.estimate if b.estimate is not None else np.inf for _, b in rows], w)
        low = fitted([widened(b.estimate, b.low, -widen) if b.low is not None else 0.0 for _, b in rows], w)
        high = fitted(
            [widened(b.estimate, b.high, widen) if b.high is not None else np.inf for _, b in rows], w
        )
        meets_high = at[high <= limit]
        misses_low = at[low > limit]
        ends.append(
            (
                crossing(at, estimate, limit),
                float(meets_high.max()) if meets_high.size else None,
                float(misses_low.min()) if misses_low.size else None,
            )
        )

    def smallest(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return min(known) if known else None

    estimate_, low_, high_ = (smallest([e[k] for e in ends]) for k in range(3))
    if plan.variable == "concurrency" and estimate_ is not None:
        estimate_ = float(math.floor(estimate_))
    if estimate_ is not None:  # the crossing lies within what the bounds allow
        estimate_ = max(estimate_, low_) if low_ is not None else estimate_
        estimate_ = min(estimate_, high_) if high_ is not None else estimate_
    method = f"monotone fit of {len(judged)} probes' p99 intervals (isotonic, weighted by requests), 95%"
    if host_sd > 0:
        method += (
            f", widened by the host's run-to-run spread ({math.expm1(host_sd):.0%}, first probe vs recheck)"
        )
    return CapacityFit(estimate=estimate_, low=low_, high=high_, method=method)


def widened(estimate: float | None, bound: float, widen: float) -> float:
    """`bound` moved out from `estimate` by `widen` (log scale, signed), in quadrature with its own
    distance from it."""
    if not widen or estimate is None or estimate <= 0 or bound <= 0:
        return bound
    own = math.log(bound / estimate)
    return estimate * math.exp(math.copysign(math.hypot(own, widen), widen))


def host_spread(plan: SearchPlan, first: list[RepeatResult], again: list[RepeatResult]) -> float:
    """The host's run-to-run spread on the log scale, from the one load measured twice (the first probe
    and its recheck): the difference of their log medians of each limited latency (the host's noise
    scales latencies) is that of two runs' host effects, so sd = |difference| / sqrt(2); the largest over
    the metrics. One pair: a rough estimate (1 degree of freedom), but the only between-run figure a
    search of single repeats has, and without it a probe's within-run interval claims more than it knows
    (benchmarks/search_coverage.py)."""
    spreads = [0.0]
    for limit in TAIL_LIMITS:
        if getattr(plan.slos, limit.param) is None:
            continue
        medians = [
            pooled_quantile_interval([np.asarray(r.samples(limit), dtype=float) for r in side], 0.5).estimate
            for side in (first, again)
        ]
        if all(m is not None and m > 0 for m in medians):
            before, after = (float(m) for m in medians if m is not None)
            spreads.append(abs(math.log(after / before)) / math.sqrt(2))
    return max(spreads)


def fitted(values: Sequence[float], weights: np.ndarray) -> np.ndarray:
    from scipy.optimize import isotonic_regression  # scipy at call time: DAG files import accelbench.core

    fitted: np.ndarray = isotonic_regression(np.asarray(values, dtype=float), weights=weights).x
    return fitted


def crossing(loads: np.ndarray, fitted: np.ndarray, limit: float) -> float | None:
    """The load where the fitted curve reaches `limit`, linear between the probes either side; the top
    load when it never does, None when even the lowest is over it."""
    over = np.flatnonzero(fitted > limit)
    if over.size == 0:
        return float(loads[-1])
    first = int(over[0])
    if first == 0:
        return None
    x0, x1, y0, y1 = loads[first - 1], loads[first], fitted[first - 1], fitted[first]
    if not np.isfinite(y1) or y1 <= y0:
        return float(x0)
    return float(x0 + (limit - y0) / (y1 - y0) * (x1 - x0))


def merged_repeats(batches: Sequence[ProbeResult]) -> list[RepeatResult]:
    """A probe's repeats over every measurement at its load: each repeat made longer by the next's."""
    repeats = list(batches[0].repeats)
    for batch in batches[1:]:
        repeats = [r.longer(more) for r, more in zip(repeats, batch.repeats, strict=True)]
    return repeats


def probe_drift(
    plan: SearchPlan, first: list[RepeatResult], again: list[RepeatResult], load: float
) -> str | None:
    """Whether the first probe and its recheck disagree (`accelbench.core.drift.drift`) on a latency the
    SLOs limit; the text names both figures, None when they agree."""
    return repeats_drift(
        [limit for limit in TAIL_LIMITS if getattr(plan.slos, limit.param) is not None],
        first,
        again,
        f"{load:g} {plan.unit}",
    )


def repeats_drift(
    limits: Sequence[Limit], first: Sequence[RepeatResult], again: Sequence[RepeatResult], where: str
) -> str | None:
    """The first of `limits` whose metric's requests at the start (`first`) and at the end (`again`)
    drifted apart (`accelbench.core.drift.drift`), in words; None when none did."""
    for limit in limits:
        before, after = ([r.samples(limit) for r in side] for side in (first, again))
        if found := drift(limit.label.removeprefix("p99 "), where, before, after):
            return found
    return None


SATURATION_SLOPE = 1.0  # latency elasticity past which throughput falls as the load grows (Little's law)
SATURATION_CONFIDENCE = 0.95  # the one-sided test's


def saturation(
    plan: SearchPlan, before: tuple[float, list[RepeatResult]], after: tuple[float, list[RepeatResult]]
) -> str | None:
    """Whether the server is past its throughput between two passing bracket probes: the median E2E
    latency (TTFT where none) grew with the load by a log-log slope over SATURATION_SLOPE = 1, tested
    one-sided at 95% (z over the slope's standard error from the two medians' 95% intervals on the log
    scale). Slope 1 is where requests per second stop growing (a concurrency's throughput is load /
    latency); over it more load only queues, so growing the bracket further measures the queue, not
    the server. The text says what was measured; None when the test does not reject slope <= 1."""
    from scipy.stats import norm  # scipy at call time: DAG files import accelbench.core

    figures = []
    for load, repeats in (before, after):
        metric = next((m for m in ("e2el_ms", "ttft_ms") if all(getattr(r, m) for r in repeats)), None)
        if metric is None:
            return None
        groups = [np.asarray(getattr(r, metric), dtype=float) for r in repeats]
        median = pooled_quantile_interval(groups, 0.5)
        if median.estimate is None or median.low is None or median.high is None or median.low <= 0:
            return None
        se = (math.log(median.high) - math.log(median.low)) / (
            2 * float(norm.ppf(1 - (1 - median.confidence) / 2))
        )
        figures.append((load, median.estimate, se, metric))
    (x0, m0, se0, metric), (x1, m1, se1, _) = figures
    if x1 <= x0 or m0 <= 0:
        return None
    run = math.log(x1 / x0)
    slope = math.log(m1 / m0) / run
    z = (slope - SATURATION_SLOPE) / (math.hypot(se0, se1) / run)
    if z <= float(norm.ppf(SATURATION_CONFIDENCE)):
        return None
    name = "E2E latency" if metric == "e2el_ms" else "TTFT"
    return (
        f"past saturation: p50 {name} {m0:.0f} -> {m1:.0f} ms from {x0:g} to {x1:g} {plan.unit}, "
        f"log-log slope {slope:.2f} > {SATURATION_SLOPE:g} (one-sided z = {z:.1f}, 95%): "
        "more load only queues"
    )
