"""The SLOs the report judges levels by: they live in `accelbench.core.slos` (the load search in
`accelbench.search` judges its probes by the same rule) and are re-exported here for the report's
modules and the DAG files that import them at parse time; the three-valued verdict of a level against
them, what more measurement would decide an undecided one, and the best level under them.

A latency limit is judged on the figure's 95% interval (`accelbench.core.intervals.slo_verdict`): met when
the whole interval is at or under the limit, missed when it is wholly over, undecided when the limit is
inside it (or the bound that would decide it is unknown: a p99 of fewer than 368 requests has no upper
bound), and always undecided when the host drifted under one of the point's runs (`runs.host_drift`, the
recheck of `accelbench.core.drift`). A figure with no interval at all (one repeat without request samples:
an imported result, an older lake) is judged on its estimate, as before intervals, and says so. The error-
rate limit judges the requests that failed in the repeats, not an estimate: failed requests under the
limit never make a level undecided.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from accelbench.core.intervals import (
    CONFIDENCE,
    Interval,
    SloVerdict,
    factor_to_decide,
    min_requests,
    slo_verdict,
)
from accelbench.core.slos import DEFAULT_MAX_ERROR_RATE, LIMITS, Limit, Slos
from accelbench.report.model import INLINE, Point
from accelbench.report.points import PERCENTILES
from accelbench.report.pricing import cost_order

__all__ = [
    "DEFAULT_MAX_ERROR_RATE",
    "LIMITS",
    "BestPoint",
    "Judgeable",
    "Limit",
    "Slos",
    "best_under_slos",
    "limit_verdict",
    "repeats_to_decide",
    "slo_judgement",
    "to_decide",
    "undecided_above",
]

MAX_REPEATS_SAID = 200  # beyond this many repeats the page says "more than", not a number
JUDGED_ON_ESTIMATE = ("error_rate",)  # counted, not estimated: the observed rate is what is judged
QUANTILES = PERCENTILES  # "p99" -> 0.99: which quantile a limit's field is


class Judgeable(Protocol):
    """What a level is judged by: a report's point (`accelbench.report.model.Point`), or the capacity
    planner's row of one (`accelbench.report.capacity_planner.PlannerPoint`)."""

    @property
    def host_drift(self) -> str | None: ...
    @property
    def latency_interval_basis(self) -> str | None: ...
    @property
    def latency_interval_n(self) -> int | None: ...
    @property
    def repeats(self) -> int | None: ...
    def figure(self, name: str) -> Interval: ...


@dataclass(frozen=True, slots=True)
class BestPoint:
    """A configuration's best level under the SLOs (`best_under_slos`), with its undecided higher levels in
    words (`undecided_above`: what would decide them; None when there are none)."""

    point: Point = field(metadata=INLINE)
    undecided_above: str | None = None


def _interval(limit: Limit, p: Judgeable) -> Interval:
    return p.figure(limit.field)


def limit_verdict(limit: Limit, bound: float | None, p: Judgeable) -> SloVerdict | None:
    """Point `p` against one limit at `bound`: None without a limit; a missing figure fails or not as
    `limit.missing_fails` says; a figure without an interval, or the error rate, is judged on its value. A
    latency of a point whose host drifted under one of its runs (`host_drift`) is undecided whatever its
    interval says: its figures are not the server's alone."""
    if bound is None:
        return None
    interval = _interval(limit, p)
    value = interval.estimate
    if value is None:
        return "misses" if limit.missing_fails else "meets"
    if limit.field in JUDGED_ON_ESTIMATE:
        return "misses" if value > bound else "meets"
    if p.host_drift:
        return "undecided"
    if interval.low is None and interval.high is None:
        return "misses" if value > bound else "meets"
    return slo_verdict(interval, bound)


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}"


@lru_cache(maxsize=1)
def t_quantiles() -> tuple[float, ...]:
    """The two-sided t quantile of CONFIDENCE for k = 2 .. MAX_REPEATS_SAID repeats (index k - 2): the
    planner's page gets the same list, so its JavaScript decides as `repeats_to_decide` does."""
    from scipy import stats

    return tuple(float(stats.t.ppf((1 + CONFIDENCE) / 2, k - 1)) for k in range(2, MAX_REPEATS_SAID + 1))


def repeats_to_decide(estimate: float, side: float, bound: float, k: int) -> int | None:
    """The fewest repeats whose t interval over the repeats' log percentiles would leave `bound` outside,
    the geometric mean and the spread staying as measured: the spread s follows from the present interval's
    half-width on the limit's side (`side`: its bound there) over k repeats, and k' repeats give a
    half-width t(k' - 1) s / sqrt(k'). None beyond MAX_REPEATS_SAID, or at the limit."""
    if min(estimate, side, bound) <= 0 or k < 2 or k > MAX_REPEATS_SAID:
        return None
    distance = abs(math.log(bound) - math.log(estimate))
    if distance == 0:
        return None
    tq = t_quantiles()
    spread = abs(math.log(side) - math.log(estimate)) * math.sqrt(k) / tq[k - 2]
    for more in range(k + 1, MAX_REPEATS_SAID + 1):
        if tq[more - 2] * spread / math.sqrt(more) < distance:
            return more
    return None


def to_decide(limit: Limit, bound: float, p: Judgeable) -> str:
    """What more measurement would decide `p`'s undecided `limit`, in what the interval was made from
    (`latency_interval_basis`): repeats (`repeats_to_decide`) or requests per repeat (one repeat's order
    statistics: `factor_to_decide`, half-widths shrinking as 1/sqrt(requests))."""
    if p.host_drift:
        return f"{p.host_drift}; measure it again on a steadier host"
    interval = _interval(limit, p)
    basis, n = (p.latency_interval_basis or "repeats", p.latency_interval_n or p.repeats or 1)
    q = QUANTILES.get(limit.field.split("_")[0], 0.99)
    at_limit = "the estimate is at the limit: more measurement narrows the interval but may not decide it"
    if basis == "requests":
        if interval.low is None or interval.high is None:
            return (
                f"at least {min_requests(q)} requests per repeat (now {n}) would bound it on both sides, "
                "or a second repeat"
            )
        factor = factor_to_decide(interval, bound)
        if factor is None:
            return at_limit
        return f"about {max(math.ceil(factor * n), n + 1)} requests per repeat (now {n}) would decide it"
    estimate, low, high = interval.estimate, interval.low, interval.high
    if estimate is None or low is None or high is None or estimate == bound:
        return at_limit
    needed = repeats_to_decide(estimate, high if bound > estimate else low, bound, n)
    if needed is None:
        return f"more than {MAX_REPEATS_SAID} repeats (now {n}): the estimate is too close to the limit"
    return f"about {needed} repeats (now {n}) would decide it"


def slo_judgement(p: Judgeable, slos: Slos) -> tuple[SloVerdict, list[str]]:
    """(`p`'s verdict against every limit, why): misses when any limit is missed (the words of
    `Slos.misses`), else undecided when any is undecided ("p99 TTFT 1900 ms [1700, 2300] vs 2000 ms:
    about 5 repeats (now 2) would decide it"), else meets."""
    missed, undecided = [], []
    for limit in LIMITS:
        bound = getattr(slos, limit.param)
        verdict = limit_verdict(limit, bound, p)
        figure = p.figure(limit.field)
        low, high = figure.low, figure.high
        if verdict == "misses" and limit.field not in JUDGED_ON_ESTIMATE and low is not None:  # wholly over
            shown = f"[{_ms(low)}, {_ms(high)}]"
            missed.append(
                f"{limit.label} {_ms(figure.estimate)} {limit.unit} {shown} > {bound:g} {limit.unit}"
            )
        elif verdict == "misses":  # in the words of Slos.misses, this limit alone
            alone = Slos(**{other.param: None for other in LIMITS} | {limit.param: bound})
            missed += alone.misses({limit.field: figure.estimate})
        elif verdict == "undecided":
            undecided.append(
                f"{limit.label} {_ms(figure.estimate)} {limit.unit} [{_ms(low)}, {_ms(high)}] "
                f"vs {bound:g} {limit.unit}: {to_decide(limit, bound, p)}"
            )
    if missed:
        return "misses", missed
    if undecided:
        return "undecided", undecided
    return "meets", []


def best_under_slos(points: Iterable[Point], slos: Slos) -> list[BestPoint]:
    """Per configuration, the highest-throughput level that meets every SLO (an undecided level never
    counts as meeting); cheapest first. Each carries `undecided_above`: the configuration's undecided
    levels of higher throughput, with what would decide them (None if there are none)."""
    listed = list(points)
    best: dict[str, Point] = {}
    for p in listed:
        if slo_judgement(p, slos)[0] != "meets":
            continue
        key = p.configuration_id
        if key not in best or (p.output_throughput.estimate or 0) > (
            best[key].output_throughput.estimate or 0
        ):
            best[key] = p
    above = undecided_above(listed, slos, best)
    return sorted(
        (BestPoint(p, above.get(key)) for key, p in best.items()),
        key=lambda b: cost_order(b.point),
    )


def undecided_above(points: Iterable[Point], slos: Slos, best: Mapping[str, Point]) -> dict[str, str]:
    """Per configuration id, its undecided levels above its best level (`best`; every undecided level when
    it has none) in words: "c8: p99 TTFT 1900 ms [1700, 2300] vs 2000 ms: about 5 repeats (now 2) would
    decide it"."""
    found: dict[str, list[str]] = {}
    for p in points:
        verdict, why = slo_judgement(p, slos)
        key = p.configuration_id
        floor = best[key].output_throughput.estimate if key in best else None
        if verdict == "undecided" and (floor is None or (p.output_throughput.estimate or 0) > floor):
            found.setdefault(key, []).append(f"{p.level}: {'; '.join(why)}")
    return {key: " | ".join(levels) for key, levels in found.items()}
