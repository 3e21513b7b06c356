"""The load search's statistics under the interval rule: the capacity fitted from every probe together
(`fit_capacity`), the host's run-to-run spread of the judged p99 over every load measured twice
(`host_spread`, `Spread`), drift between two
measurements of one load (`probe_drift`, `repeats_drift`) and over-saturation (`saturation`). See
`accelbench.search.load_search` for the rule and the algorithm."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from accelbench.core.changes import Spread
from accelbench.core.drift import drift
from accelbench.core.intervals import (
    CONFIDENCE,
    pooled_quantile_interval,
    quantile_interval,
    repeat_quantiles,
    widened,
)
from accelbench.core.search_plan import (
    TAIL_LIMITS,
    UNDECIDED_HIGH,
    CapacityFit,
    Probe,
    ProbeResult,
    RepeatResult,
    SearchPlan,
    SloBound,
)
from accelbench.core.slos import Limit


def run_spread(
    groups: Sequence[Sequence[float]],
    metric: str | None = None,
    sampling: Sequence[Sequence[float]] | None = None,
) -> Spread:
    """The host's spread of one run's statistic from runs at the same load (each group: the statistic's
    values, > 0, of 2 or more runs at one load): the pooled within-group variance of their logs (the host's
    noise scales latencies), sum of squared deviations over sum of (runs - 1), which is the df; less the
    runs' mean sampling variance on the log scale (`sampling`, the same shape: each run's own requests'
    noise, which a probe's interval already holds), floored at 0 (a method-of-moments estimate; its df
    taken as the pooled variance's). A pair of runs without `sampling` gives |log ratio| / sqrt(2), 1 df."""
    ss, df, own, runs = 0.0, 0, 0.0, 0
    for k, group in enumerate(groups):
        values = np.asarray(group, dtype=float)
        variances = np.asarray(sampling[k], dtype=float) if sampling is not None else np.zeros(values.size)
        keep = np.isfinite(values) & (values > 0) & np.isfinite(variances)
        values, variances = values[keep], variances[keep]
        if values.size < 2:
            continue
        logs = np.log(values)
        ss += float(((logs - logs.mean()) ** 2).sum())
        df += int(values.size - 1)
        own, runs = own + float(variances.sum()), runs + int(values.size)
    if not df:
        return Spread(metric=metric)
    return Spread(math.sqrt(max(ss / df - own / runs, 0.0)), df, runs, metric)


def host_spread(
    plan: SearchPlan,
    measured: Sequence[Sequence[Sequence[RepeatResult]]],
    extra: Mapping[str, Sequence[Spread]] | None = None,
    prior: Spread | None = None,
) -> Spread:
    """The host's run-to-run spread of the statistic the SLOs judge: for each limited latency, the p99 of
    each measurement of one load (`measured`: per load, its measurements, each a probe's repeats: a probe
    measured again while undecided, and the first probe with its recheck), the geometric mean of its
    repeats' median-unbiased p99s, pooled by `run_spread` over every load measured more than once (less
    each run's sampling variance, `run_p99`) and with `extra` (earlier runs' spreads of the same p99,
    keyed by the limit's label: "p99 TTFT") and the `prior` (`PRIOR_SPREAD`: any metric's); the metric
    with the largest sd. The median, the rule before
    (issue 48), moved 1.6% where the p99 moved 16%."""
    spreads = [Spread()]
    for limit in TAIL_LIMITS:
        if getattr(plan.slos, limit.param) is None:
            continue
        runs = [[run_p99(limit, repeats) for repeats in m] for m in measured if len(m) > 1]
        groups = [[value for value, _ in group] for group in runs]
        sampling = [[variance for _, variance in group] for group in runs]
        earlier = [*(extra or {}).get(limit.label, ()), *([prior] if prior is not None else [])]
        spread = run_spread(groups, limit.label, sampling).pooled(earlier)
        spreads.append(spread)
    return max(spreads, key=lambda s: (s.log_sd, s.df))


SAMPLING_CONFIDENCE = 0.5  # the order-statistic interval a run's sampling sd is read from (138 requests on)


def run_p99(limit: Limit, repeats: Sequence[RepeatResult]) -> tuple[float, float]:
    """One measurement's p99 of `limit`'s metric, the geometric mean of its repeats' median-unbiased p99s
    (`pooled_quantile_interval`'s centre), and its sampling variance on the log scale: each repeat's from
    its p99's 50% order-statistic interval (half-width / 0.674, a normal's quartile; 0 where too few
    requests bound it: the spread then errs wide), their mean over the repeats' count. nan without
    requests or a p99 <= 0."""
    from scipy.stats import norm  # scipy at call time: DAG files import accelbench.core

    groups = [np.asarray(r.samples(limit), dtype=float) for r in repeats if r.samples(limit)]
    quantiles = repeat_quantiles(groups, 0.99) if groups else np.array([])
    if not quantiles.size or (quantiles <= 0).any():
        return math.nan, math.nan
    z = float(norm.ppf((1 + SAMPLING_CONFIDENCE) / 2))
    variances = []
    for group in groups:
        interval = quantile_interval(group, 0.99, SAMPLING_CONFIDENCE)
        ok = interval.low is not None and interval.high is not None and interval.low > 0
        sd = (math.log(interval.high) - math.log(interval.low)) / (2 * z) if ok else 0.0  # type: ignore[arg-type]
        variances.append(sd**2)
    return float(np.exp(np.log(quantiles).mean())), float(np.mean(variances)) / len(variances)


def run_widening(plan: SearchPlan, spread: Spread | None, runs: int, confidence: float = CONFIDENCE) -> float:
    """How far (log scale) a probe's p99 interval moves out for the host's run-to-run spread: the spread's
    t half-width at `confidence` over the mean of the probe's `runs` (each measurement of its load is one
    run, its own host state: sd / sqrt(runs)). 0 with repeats > 1: their t interval over repeats already
    holds the runs' spread."""
    if spread is None or plan.repeats > 1:
        return 0.0
    return spread.quantile(confidence) / math.sqrt(max(runs, 1))


def fit_capacity(
    plan: SearchPlan, probes: Sequence[Probe], spread: Spread | None = None
) -> CapacityFit | None:
    """The `CapacityFit` of the probes with intervals (None under the point rule, or none measured).
    `spread`: the host's run-to-run spread of the judged p99 (`host_spread`), which a probe's requests do
    not show: each probe's own p99 interval is moved out by `run_widening` (t with the spread's df, at
    95%, over the probe's runs), in quadrature with its own half-width on the log scale.

    The upper end: the smallest load whose fitted (or own) widened low bound is over the limit, else the
    smallest load the search judged to miss (a probe failed: bounds never lost to a pooled fit, issue 48).
    Without one, the highest load measured when it was undecided (the search's range ends there): the
    upper end said undecided (`CapacityFit.high_undecided`); else the end is open and the method says so."""
    judged = sorted((p for p in probes if p.bounds), key=lambda p: p.load)
    if not judged:
        return None
    loads = np.array([p.load for p in judged])
    weights = np.array([max(p.requests, 1) for p in judged], dtype=float)
    widen = [run_widening(plan, spread, p.extensions + 1) for p in judged]
    ends: list[tuple[float | None, float | None, float | None]] = []
    for metric in sorted({b.metric for p in judged for b in p.bounds}):
        rows = [(i, b) for i, p in enumerate(judged) for b in p.bounds if b.metric == metric]
        index = [i for i, _ in rows]
        at, limit, w = loads[index], rows[0][1].limit, weights[index]
        # A bound the requests could not give: the high one unbounded (never "sure to meet"), the low one 0.
        estimate = fitted([b.estimate if b.estimate is not None else np.inf for _, b in rows], w)
        own_low = np.array([_moved(b.estimate, _own(b, "low"), -widen[i], 0.0) for i, b in rows])
        low = fitted(own_low, w)
        high = fitted(np.array([_moved(b.estimate, _own(b, "high"), widen[i], np.inf) for i, b in rows]), w)
        meets_high = at[high <= limit]
        misses_low = at[(low > limit) | (own_low > limit)]
        ends.append(
            (
                crossing(at, estimate, limit),
                float(meets_high.max()) if meets_high.size else None,
                float(misses_low.min()) if misses_low.size else None,
            )
        )

    def smallest(values: Sequence[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return min(known) if known else None

    estimate_, low_, high_ = (smallest([e[k] for e in ends]) for k in range(3))
    high_ = smallest([high_, *(p.load for p in probes if p.verdict == "fail")])
    high_undecided = False
    top = max(probes, key=lambda p: p.load)
    if high_ is None and top.verdict == "undecided":
        high_, high_undecided = top.load, True
    if plan.variable == "concurrency" and estimate_ is not None:
        estimate_ = float(math.floor(estimate_))
    if estimate_ is not None:  # the crossing lies within what the bounds allow
        estimate_ = max(estimate_, low_) if low_ is not None else estimate_
        estimate_ = min(estimate_, high_) if high_ is not None else estimate_
    method = (
        f"monotone fit of {len(judged)} probes' p99 intervals (isotonic, weighted by requests), 95%"
        " (each probe's looks Bonferroni-corrected: 1 - 5% / its most looks each)"
    )
    if spread is not None and spread.df > 0 and plan.repeats == 1:
        method += f", widened by the host's run-to-run spread of the p99 ({spread.text()}, t interval)"
    if high_undecided and high_ is not None:
        method += f"; upper end {high_:g} {UNDECIDED_HIGH}: no load judged to miss"
    elif high_ is None:
        method += f"; upper end open: no load up to {float(loads.max()):g} judged to miss"
    return CapacityFit(estimate=estimate_, low=low_, high=high_, method=method, high_undecided=high_undecided)


def _own(bound: SloBound, end: Literal["low", "high"]) -> float | None:
    """A bound's end from its requests alone (before any widening at its look)."""
    if end == "low":
        return bound.own_low if bound.own_low is not None else bound.low
    return bound.own_high if bound.own_high is not None else bound.high


def _moved(estimate: float | None, end: float | None, widen: float, missing: float) -> float:
    """`end` widened by `widen` (`intervals.widened`); `missing` where the requests gave none."""
    return missing if end is None else widened(estimate, end, widen)


def fitted(values: Sequence[float] | np.ndarray, weights: np.ndarray) -> np.ndarray:
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
