"""Adaptive load search: the largest load one server sustains while its SLOs hold (its capacity).

Pure logic, no I/O: a `LoadSearch` says which load to probe next (`next_load()`) and judges what the
probe measured (`record(ProbeResult)`); `run_search(plan, probe)` drives it with a `probe(load)`
callable. The load generator's driver runs real probes through it, the unit tests synthetic ones.

The rule (one probe = `repeats` runs at one load):

- The error rate is judged per repeat on any number of requests (a failed request is a fact, not a
  tail estimate): over its limit the probe fails. Under it, failures do not make a repeat too small: a
  p99 counts from `SearchPlan.trusted_requests` = `min_requests` x (1 - the error-rate limit) completed
  requests (990 of 1,000 at 1%), since the p99 of 990 rests on 9.9 requests beyond it where 1,000 had
  10. Fewer: the probe is "untrusted" (a p99 may still fail it).
- The point rule (no `max_requests`; a campaign's `search_rule=point`): a probe passes only if every
  repeat's p99s hold the SLOs (`Slos.misses`, the report's rule). A mean of the repeats would let one bad
  repeat through; requiring every repeat makes noise move the capacity down, never up.
- The interval rule (`max_requests` set; a campaign's default, `search_rule=interval`): each tail SLO is
  judged three-valued on the 95% interval of its p99 over the probe's repeats
  (`accelbench.core.intervals.pooled_quantile_interval`: order statistics within one repeat, a t interval
  over several) by `slo_verdict`: meets, misses, undecided.
  A miss fails the probe, all meeting passes it; an undecided probe is measured again at the same load
  (each repeat made longer by as many requests again, `RepeatResult.longer`) until decided or until a
  repeat would pass `max_requests`. At that cap it stays "undecided" and bounds the bracket from above
  like a miss: a capacity is always a load known to meet, never one decided by noise.
- A probe with a client-limited repeat is never the server's failure: a rate the client could not
  send (`accelbench.core.metrics.CLIENT_LIMITED_RATIO`), or a concurrency it could not keep in flight
  (the driver's `in_flight_kept`, with the same 10% tolerance). The search stops there,
  "client-limited at X". A probe whose level failed (`LoadSearch.fail`: the server died or stopped
  answering) stops it as "probe_failed", keeping the bracket found so far.

The algorithm: bracket first, growing from `lower` by `growth` (x2) until a probe fails or `upper`
passes; then bisect [largest pass, smallest fail] until the precision holds: the gap within `step`
(one step: 1 for an integer concurrency) or within `relative` x the passing load. With a relative
precision the midpoint is the geometric mean (each probe halves the gap's ratio), with a step the
arithmetic one. The probes needed grow with log(capacity / lower) + log(log(growth) / precision), a
fixed grid of the same precision over the same range needs log(upper / lower) / precision of them
(`SearchPlan.grid`).

Under the interval rule two more steps: the capacity from every probe together (`fit_capacity`: each SLO's p99
estimates and bounds fitted monotone in the load by isotonic regression weighted by requests; the capacity is
the largest passing probe under the fitted crossing, its interval from the largest load whose fitted high
bound meets the limit to the smallest whose fitted low bound misses it, each bound first widened by the host's
run-to-run spread that the recheck below shows (`_host_spread`: a within-run interval knows only its own
requests): "26 concurrent [24, 28] at 95%"); and drift: the first probe is measured again at the end
("recheck"), and when the two lie more than 2x apart beyond their intervals (`accelbench.core.drift`: a
within-run interval does not hold how one host's runs differ) the outcome is "drifted" with both figures,
not a capacity. And
over-saturation: bracketing stops at a passing probe when the median latency grew with the load by a log-log
slope over 1 (throughput falling), tested one-sided at 95% (`_saturation`): outcome "saturated", at least that
load. The bracket stays the search's way to choose loads; the fit is what it reports.

What peers do: vLLM 0.11-0.14's `serve_sla` searched one integer variable in [1, 65536] by the root of
a PCHIP interpolation of the SLA margin through the probes, judging each probe by the mean of its runs,
until min failing - max passing <= 1 (the pinned 0.32.0 has only `vllm bench sweep serve_workload`, a
linear spread of levels with no SLO). Taken from it: the bracket as largest pass / smallest fail and
the stop on its gap (made relative for rates), the variable names, one server for the whole search,
the margin naming the limiting metric. AIPerf 0.13 searches SLA boundaries with monotone planners and
a bootstrap interval on the boundary; here the boundary's interval comes from the probes' own p99
intervals through the same monotone fit, and a probe the noise cannot decide is measured longer
rather than interpolated. Different from both: no opening probe at the maximum (the longest and most
saturating probe, and 65536 req/s on a CPU is a queue), the client-limited and failed-probe stops, and
the recheck that sees a host drifting under the search.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from accelbench.core.drift import drift
from accelbench.core.intervals import Interval, SloVerdict, pooled_quantile_interval, slo_verdict
from accelbench.core.slos import LIMITS, SAMPLE_WARNING_REQUESTS, Limit, Slos

# time_scale: a timed trace's pace (its headroom: how many times the recorded traffic a server holds)
SearchVariable = Literal["concurrency", "request_rate", "time_scale"]
Phase = Literal["bracket", "bisect", "recheck"]  # recheck: the first probe measured again at the end
# undecided: a p99's interval still held its SLO's limit when the probe reached `max_requests`.
Verdict = Literal["pass", "fail", "undecided", "client_limited", "untrusted", "probe_failed"]
# capacity: bracketed within the precision; upper_bound: `upper` passed (the capacity is at least it);
# below_lower: `lower` failed (no capacity in range); saturated: bracketing stopped at a passing probe past
# the server's throughput (`_saturation`: the capacity is at least it); client_limited / untrusted /
# probe_failed: stopped at a probe (probe_failed: its level failed, no usable result: the bracket found
# before it is kept); drifted: the first probe measured again at the end disagreed with itself beyond both
# intervals (no capacity).
Outcome = Literal[
    "capacity",
    "upper_bound",
    "below_lower",
    "saturated",
    "client_limited",
    "untrusted",
    "probe_failed",
    "drifted",
]
ANSWERED_OUTCOMES: tuple[Outcome, ...] = ("capacity", "upper_bound", "below_lower", "saturated")
# What the same spec measured again would most likely find again (lake/measured.py does not re-run it): an
# answer, and the stops that come from the spec or its instance type (the client's CPU is the instance's,
# a repeat's count of requests is the spec's). A failed probe (a crashed or lost server) or a host that
# drifted under the search may not recur.
SETTLED_OUTCOMES: tuple[Outcome, ...] = (*ANSWERED_OUTCOMES, "client_limited", "untrusted")
MIN_P99_REQUESTS = 100  # below this a "p99" is the slowest request or close to it, never a tail estimate
TAIL_LIMITS = tuple(limit for limit in LIMITS if limit.field.startswith("p99_"))  # need min_requests
LEVEL_KINDS: dict[str, Literal["concurrency", "rate", "scale"]] = {
    "concurrency": "concurrency",
    "request_rate": "rate",
    "time_scale": "scale",
}
UNITS = {
    "concurrency": "concurrent",
    "request_rate": "req/s",
    "time_scale": "x the trace",
}  # a load of each variable, as said


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SearchPlan(_Frozen):
    """What to search: the load variable, its bounds, the precision to stop at, the repeats per probe
    and the SLOs every repeat must hold. Without a precision: one step for a concurrency, 10% for a
    request rate."""

    variable: SearchVariable
    lower: float = Field(gt=0)
    upper: float = Field(gt=0)
    relative: float | None = Field(default=None, gt=0, lt=1)  # stop when fail - pass <= relative x pass
    step: float | None = Field(default=None, gt=0)  # stop when fail - pass <= step
    growth: float = Field(default=2.0, gt=1)  # the bracket's factor from one probe to the next
    repeats: int = Field(default=1, ge=1)
    min_requests: int = Field(default=SAMPLE_WARNING_REQUESTS, ge=MIN_P99_REQUESTS)
    slos: Slos = Slos()
    # None: each probe is judged on its repeats' p99s (the rule before intervals). A number: on the 95%
    # interval of each p99 over its repeats' requests; a probe whose interval holds a limit is measured
    # again at the same load (its repeats made longer) until it is decided or a repeat reaches this many.
    max_requests: int | None = Field(default=None, ge=MIN_P99_REQUESTS)

    @model_serializer(mode="wrap")
    def _without_unset_fields(self, handler: SerializerFunctionWrapHandler, _: SerializationInfo) -> Any:
        """A plan without the fields added since issue 29 dumps as before them: its spec's id stays."""
        data = handler(self)
        if isinstance(data, dict) and data.get("max_requests") is None:
            data.pop("max_requests", None)
        return data

    @model_validator(mode="before")
    @classmethod
    def _default_precision(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("relative") is None and data.get("step") is None:
            data = dict(data)
            if data.get("variable") == "concurrency":
                data["step"] = 1
            else:
                data["relative"] = 0.1
        return data

    @model_validator(mode="after")
    def _consistent(self) -> SearchPlan:
        problems = []
        if self.upper < self.lower:
            problems.append(f"upper={self.upper:g}: below lower={self.lower:g}")
        if self.relative is not None and self.step is not None:
            problems.append(f"step={self.step:g}: give a relative precision or a step, not both")
        if self.variable == "concurrency":
            for name in ("lower", "upper", "step"):
                value = getattr(self, name)
                if value is not None and value != int(value):
                    problems.append(f"{name}={value:g}: a concurrency is a whole number")
        if self.max_requests is not None and self.max_requests < self.min_requests:
            problems.append(f"max_requests={self.max_requests}: below min_requests={self.min_requests}")
        if all(getattr(self.slos, limit.param) is None for limit in LIMITS):
            problems.append("slos=none: a search needs at least one SLO to hold")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def level_kind(self) -> Literal["concurrency", "rate", "scale"]:
        """The variable as a load level's kind (`evidence.LevelKind`: `Level.kind`, the lake's
        `level_kind`; spelt out, as the spec and the evidence import this module)."""
        return LEVEL_KINDS[self.variable]

    @property
    def unit(self) -> str:
        return UNITS[self.variable]

    @property
    def trusted_requests(self) -> int:
        """The fewest completed requests a repeat's p99 counts from: `min_requests` less the failures the
        error-rate limit allows. A failed request is judged by the error rate; under its limit it leaves the
        p99 resting on (1 - limit) x as many requests beyond it (9.9 instead of 10 at 1%), a change below
        what the choice of `min_requests` itself means. Without an error-rate limit: `min_requests`."""
        allowed = self.slos.max_error_rate or 0.0
        return max(1, math.ceil(self.min_requests * (1 - allowed) - 1e-9))

    def precise(self, passing: float, failing: float) -> bool:
        """Whether the bracket [passing, failing] is as narrow as the plan asks (one concurrency step is
        always the finest there is)."""
        gap = failing - passing
        if self.variable == "concurrency" and gap <= 1:
            return True
        if self.step is not None:
            return gap <= self.step * (1 + 1e-9)
        assert self.relative is not None  # one of the two, by _default_precision
        return gap <= self.relative * passing * (1 + 1e-9)

    def normalise(self, load: float) -> float:
        """A load as it is probed: a whole concurrency, a rate to 4 significant digits."""
        return float(math.floor(load + 0.5)) if self.variable == "concurrency" else float(f"{load:.4g}")

    def grid(self) -> list[float]:
        """The fixed grid that reaches the same precision over [lower, upper]: every step, or every
        factor (1 + relative), with upper last. What the search is compared with."""
        loads, load = [], self.normalise(self.lower)
        while load < self.upper:
            loads.append(load)
            following = load + self.step if self.step is not None else load * (1 + (self.relative or 0))
            # Never wider than the precision: a concurrency rounds down (one step is always precise).
            load = (
                max(float(math.floor(following)), load + 1) if self.variable == "concurrency" else following
            )
        return [*loads, self.upper]


class RepeatResult(_Frozen):
    """One repeat of a probe, as the load generator measured it: its counts, p99s and, for the interval
    rule (`SearchPlan.max_requests`), each completed request's latencies (empty: not given)."""

    completed: int = Field(ge=0)
    failed: int = Field(default=0, ge=0)
    p99_ttft_ms: float | None = None
    p99_tpot_ms: float | None = None
    p99_e2el_ms: float | None = None
    client_limited: bool | None = None  # None: not known
    duration_s: float = Field(default=0.0, ge=0)  # seconds the server was under this repeat's load
    ttft_ms: tuple[float, ...] = ()
    tpot_ms: tuple[float, ...] = ()  # requests of one output token have none
    e2el_ms: tuple[float, ...] = ()

    def samples(self, limit: Limit) -> tuple[float, ...]:
        """The requests' values of a tail limit's metric ("p99_ttft_ms" -> ttft_ms)."""
        values: tuple[float, ...] = getattr(self, limit.field.removeprefix("p99_"))
        return values

    def longer(self, more: RepeatResult) -> RepeatResult:
        """This repeat made longer by `more` at the same load: counts and requests together, the p99s
        of the requests together (None where either has no requests)."""
        fields: dict[str, Any] = {
            "completed": self.completed + more.completed,
            "failed": self.failed + more.failed,
            "client_limited": bool(self.client_limited or more.client_limited),
            "duration_s": self.duration_s + more.duration_s,
        }
        for limit in TAIL_LIMITS:
            name = limit.field.removeprefix("p99_")
            values = self.samples(limit) + more.samples(limit)
            fields[name] = values
            fields[limit.field] = float(np.percentile(values, 99)) if values else None
        return RepeatResult(**fields)

    @property
    def error_rate(self) -> float | None:
        sent = self.completed + self.failed
        return self.failed / sent if sent else None

    def point(self) -> dict[str, float | None]:
        """The repeat as the point `Slos.misses` and `Limit.fails` read."""
        return {limit.field: getattr(self, limit.field, None) for limit in TAIL_LIMITS} | {
            "error_rate": self.error_rate
        }


class ProbeResult(_Frozen):
    """What a probe measured: its load and every repeat."""

    load: float
    repeats: tuple[RepeatResult, ...] = Field(min_length=1)


class SloBound(_Frozen):
    """One tail SLO of a probe under the interval rule: the p99's 95% interval over the probe's requests
    (`accelbench.core.intervals.pooled_quantile_interval`) and what it says of the limit."""

    metric: str  # "p99 TTFT"
    limit: float
    estimate: float | None
    low: float | None
    high: float | None
    verdict: SloVerdict
    method: str

    @classmethod
    def of(cls, limit: Limit, bound: float, interval: Interval) -> SloBound:
        verdict = slo_verdict(interval, bound) or "undecided"
        return cls(
            metric=limit.label,
            limit=bound,
            estimate=interval.estimate,
            low=interval.low,
            high=interval.high,
            verdict=verdict,
            method=interval.method,
        )

    def text(self) -> str:
        """ "p99 TTFT 480 ms [430, 560] vs 500 ms" """
        ends = ", ".join("?" if v is None else f"{v:.0f}" for v in (self.low, self.high))
        value = "not measured" if self.estimate is None else f"{self.estimate:.0f} ms [{ends}]"
        return f"{self.metric} {value} vs {self.limit:g} ms"


class Probe(_Frozen):
    """One probe as the search judged it."""

    step: int  # 0 for the first probe of the search, then 1, 2, ...
    phase: Phase
    load: float
    verdict: Verdict
    misses: tuple[str, ...] = ()  # "repeat 2: p99 TTFT 2500 ms > 2000 ms", one per miss
    limiting: str | None = None  # the limit furthest over its bound in a failing probe ("p99 TTFT")
    why: str | None = None  # why a client_limited, untrusted, undecided or failed probe stopped
    server_s: float = 0.0
    requests: int = 0  # completed requests judged, over every repeat (and its extensions)
    extensions: int = 0  # how many times the probe was measured again to decide it
    bounds: tuple[SloBound, ...] = ()  # the interval rule's p99 intervals (empty under the point rule)


class SearchResult(_Frozen):
    """The searched capacity and how it was found: the bracket [passing, failing] it lies in (None where
    no probe passed, or none failed), the limiting metric (the failing end's: the SLO that breaks first
    as the load grows), where the search stopped without a capacity, the probes and their cost."""

    plan: SearchPlan
    outcome: Outcome
    capacity: float | None
    passing: float | None
    failing: float | None
    limiting: str | None
    stopped_at: float | None = None  # the client-limited, untrusted or failed probe's load
    stopped_why: str | None = None  # why the search stopped there
    probes: tuple[Probe, ...]
    probes_used: int
    server_s: float  # seconds under load over every repeat of every probe
    # The interval rule's capacity interval (`fit_capacity`); None under the point rule.
    capacity_low: float | None = None
    capacity_high: float | None = None
    capacity_method: str | None = None

    def capacity_text(self) -> str:
        """ "26 concurrent [24, 28] at 95%" (an open end: "-"), or "26 concurrent" without an interval."""
        assert self.capacity is not None
        return capacity_words(
            self.capacity,
            self.plan.unit,
            self.capacity_low,
            self.capacity_high,
            interval=self.capacity_method is not None,
        )

    def summary(self) -> str:
        unit, cost = self.plan.unit, f"{self.probes_used} probes, {self.server_s:.0f} server-s"
        if self.outcome in ("client_limited", "untrusted"):
            why = self.stopped_why
            return f"{self.outcome.replace('_', '-')} at {self.stopped_at:g} {unit}: {why} ({cost})"
        if self.outcome == "saturated":
            return f"capacity at least {self.capacity_text()}: {self.stopped_why} ({cost})"
        if self.outcome == "drifted":
            return f"no capacity: {self.stopped_why} ({cost})"
        if self.outcome == "probe_failed":
            so_far = (
                f"; bracket so far [{_bound(self.passing)}, {_bound(self.failing)}]"
                if self.passing is not None or self.failing is not None
                else ""
            )
            return f"probe failed at {self.stopped_at:g} {unit}: {self.stopped_why}{so_far} ({cost})"
        if self.outcome == "below_lower":  # the lower bound missed, or stayed undecided at the cap
            lowest = [p for p in self.probes if p.load == self.failing and p.phase != "recheck"]
            how = "is undecided at the cap on" if lowest and lowest[-1].verdict == "undecided" else "misses"
            return f"no capacity: {self.failing:g} {unit} (the lower bound) {how} {self.limiting} ({cost})"
        if self.outcome == "upper_bound":
            return f"capacity at least {self.capacity_text()}: the upper bound passed ({cost})"
        return (
            f"capacity {self.capacity_text()} (bracket [{self.passing:g}, {self.failing:g}], "
            f"limited by {self.limiting}; {cost})"
        )


class CapacityFit(_Frozen):
    """The capacity from every probe together (the interval rule): per tail SLO, the probes' p99
    estimates, low and high bounds each fitted monotone in the load (`scipy.optimize.isotonic_regression`,
    weighted by requests: latency does not fall as load grows, so a non-monotone wiggle is noise). The
    estimate is where the fitted estimate crosses the limit (linear between probes); the interval runs
    from the largest load whose fitted high bound is within the limit (it meets at 95%) to the smallest
    whose fitted low bound is over it (it misses at 95%). Over several SLOs, the smallest of each. A
    None end: no probe was sure (low: not even the lowest load; high: none missed)."""

    estimate: float | None
    low: float | None
    high: float | None
    method: str


def fit_capacity(plan: SearchPlan, probes: Sequence[Probe], host_sd: float = 0.0) -> CapacityFit | None:
    """The `CapacityFit` of the probes with intervals (None under the point rule, or none measured).
    `host_sd`: the host's run-to-run spread of a latency on the log scale (`_host_spread`), which a
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
        estimate = _fitted([b.estimate if b.estimate is not None else np.inf for _, b in rows], w)
        low = _fitted([_widened(b.estimate, b.low, -widen) if b.low is not None else 0.0 for _, b in rows], w)
        high = _fitted(
            [_widened(b.estimate, b.high, widen) if b.high is not None else np.inf for _, b in rows], w
        )
        meets_high = at[high <= limit]
        misses_low = at[low > limit]
        ends.append(
            (
                _crossing(at, estimate, limit),
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


def _widened(estimate: float | None, bound: float, widen: float) -> float:
    """`bound` moved out from `estimate` by `widen` (log scale, signed), in quadrature with its own
    distance from it."""
    if not widen or estimate is None or estimate <= 0 or bound <= 0:
        return bound
    own = math.log(bound / estimate)
    return estimate * math.exp(math.copysign(math.hypot(own, widen), widen))


def _host_spread(plan: SearchPlan, first: list[RepeatResult], again: list[RepeatResult]) -> float:
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


def _fitted(values: Sequence[float], weights: np.ndarray) -> np.ndarray:
    from scipy.optimize import isotonic_regression  # scipy at call time: DAG files import accelbench.core

    fitted: np.ndarray = isotonic_regression(np.asarray(values, dtype=float), weights=weights).x
    return fitted


def _crossing(loads: np.ndarray, fitted: np.ndarray, limit: float) -> float | None:
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


def _merged(batches: Sequence[ProbeResult]) -> list[RepeatResult]:
    """A probe's repeats over every measurement at its load: each repeat made longer by the next's."""
    repeats = list(batches[0].repeats)
    for batch in batches[1:]:
        repeats = [r.longer(more) for r, more in zip(repeats, batch.repeats, strict=True)]
    return repeats


def _drift(plan: SearchPlan, first: list[RepeatResult], again: list[RepeatResult], load: float) -> str | None:
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


def _saturation(
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


def _bound(load: float | None) -> str:
    return "-" if load is None else f"{load:g}"


def capacity_words(
    capacity: float, unit: str, low: float | None = None, high: float | None = None, *, interval: bool = True
) -> str:
    """ "26 concurrent [24, 28] at 95%" (an open end: "-"); "26 concurrent" for a search without an
    interval (the point rule: `interval` false). One wording for the search's log, the campaign's and the
    lake's rows."""
    text = f"{capacity:g} {unit}"
    return f"{text} [{_bound(low)}, {_bound(high)}] at 95%" if interval else text


def _excess(limit: Limit, bound: float, point: dict[str, float | None]) -> float:
    """How far `point` is over `bound`, as a ratio (vLLM's margin): what names the limiting metric."""
    value = point.get(limit.field)
    if value is None or bound <= 0:
        return math.inf
    return value / bound


class LoadSearch:
    """The search as a stepper: probe `next_load()` (None once done), `record()` what it measured, read
    `result()`. See the module's docstring for the rule and the algorithm."""

    def __init__(self, plan: SearchPlan) -> None:
        self.plan = plan
        self._probes: list[Probe] = []
        self._passing: float | None = None
        self._failing: float | None = None
        self._failing_probe: Probe | None = None
        self._stopped: Probe | None = None
        self._next: float | None = plan.normalise(plan.lower)
        self._batches: list[ProbeResult] = []  # the measurements so far of the probe at `next_load()`
        self._first: list[RepeatResult] | None = None  # the first probe's repeats, for the recheck
        self._rechecking = False
        self._drift: str | None = None  # what the recheck found changed
        self._last_pass: tuple[float, list[RepeatResult]] | None = None  # the last passing bracket probe
        self._saturated: str | None = None  # why bracketing stopped at over-saturation
        self._host_sd = 0.0  # the host's run-to-run spread the recheck showed (log scale)

    def next_load(self) -> float | None:
        return self._next

    @property
    def done(self) -> bool:
        return self._next is None

    @property
    def step(self) -> int:
        """The step of the probe at `next_load()`: 0 for the first."""
        return len(self._probes)

    @property
    def phase(self) -> Phase:
        """The phase of the probe at `next_load()`: bracketing until a probe fails, then bisecting, then
        (the interval rule) the first probe again."""
        if self._rechecking:
            return "recheck"
        return "bracket" if self._failing is None else "bisect"

    def record(self, result: ProbeResult) -> Probe:
        """Judge the probe at `next_load()` and choose the next load: the same one again while the
        interval rule cannot decide it and its repeats may grow (`SearchPlan.max_requests`); the probe
        returned then is provisional (`extending`), judged on every measurement at the load so far."""
        if self._next is None:
            raise ValueError(f"load={result.load:g}: the search is over")
        if result.load != self._next:
            raise ValueError(f"load={result.load:g}: the search asked for {self._next:g}")
        if len(result.repeats) != self.plan.repeats:
            raise ValueError(f"repeats={len(result.repeats)}: the plan asks for {self.plan.repeats}")
        self._batches.append(result)
        probe, extend = self._judge(self._batches, self.phase)
        if extend:
            return probe
        merged = _merged(self._batches)
        self._batches = []
        self._probes.append(probe)
        if self._rechecking:
            assert self._first is not None
            self._drift = _drift(self.plan, self._first, merged, probe.load)
            self._host_sd = _host_spread(self.plan, self._first, merged)
            self._next = None
            return probe
        if self._first is None:
            self._first = merged
        if self.phase == "bracket" and probe.verdict == "pass" and self.plan.max_requests is not None:
            earlier, self._last_pass = self._last_pass, (probe.load, merged)
            if earlier is not None and (why := _saturation(self.plan, earlier, (probe.load, merged))):
                self._saturated = why
        if probe.verdict == "pass":
            self._passing = probe.load if self._passing is None else max(self._passing, probe.load)
        elif probe.verdict in ("fail", "undecided"):  # undecided at the cap: never counted as meeting
            if self._failing is None or probe.load < self._failing:
                self._failing, self._failing_probe = probe.load, probe
        else:
            self._stopped = probe
        self._next = None if self._saturated else self._following()
        if self._next is None and self._stopped is None and self._recheck_due():
            self._rechecking, self._next = True, self._probes[0].load
        return probe

    def _recheck_due(self) -> bool:
        """Under the interval rule the search measures its first probe again at the end (when it was
        measured: it has intervals): a host that slowed (or sped up) under the search shows as the two
        disagreeing."""
        return self.plan.max_requests is not None and bool(self._probes[0].bounds)

    @property
    def extending(self) -> bool:
        """Whether the last `record()` asked for the same load again."""
        return bool(self._batches)

    def fail(self, why: str, server_s: float = 0.0) -> Probe:
        """The probe at `next_load()` gave no usable result (its level failed: the server died, stopped
        answering, or the client wrote nothing): the search stops there and keeps the bracket so far."""
        if self._next is None:
            raise ValueError("the search is over")
        server_s += sum(r.duration_s for b in self._batches for r in b.repeats)
        probe = Probe(
            step=len(self._probes),
            phase=self.phase,
            load=self._next,
            verdict="probe_failed",
            why=why,
            server_s=server_s,
            extensions=len(self._batches),
        )
        self._batches = []
        self._probes.append(probe)
        self._stopped, self._next = probe, None
        return probe

    def _judge(self, batches: list[ProbeResult], phase: Phase) -> tuple[Probe, bool]:
        """(the probe as judged, whether to measure it again). See the module's docstring."""
        plan = self.plan
        repeats = _merged(batches)
        common: dict[str, Any] = {"step": len(self._probes), "phase": phase, "load": batches[0].load}
        common["server_s"] = sum(r.duration_s for r in repeats)
        common["requests"] = sum(r.completed for r in repeats)
        common["extensions"] = len(batches) - 1
        limited = [i for i, r in enumerate(repeats, 1) if r.client_limited]
        if limited:
            why = f"the client could not send the requested load in repeat {', '.join(map(str, limited))}"
            return Probe(**common, verdict="client_limited", why=why), False
        intervals = plan.max_requests is not None
        untrusted_slos = dataclasses.replace(plan.slos, ttft_p99_ms=None, tpot_p99_ms=None, e2el_p99_ms=None)
        misses: list[str] = []
        worst: tuple[float, str] | None = None
        small: list[str] = []
        trusted: list[RepeatResult] = []
        for i, repeat in enumerate(repeats, 1):
            enough = repeat.completed >= plan.trusted_requests
            if enough:
                trusted.append(repeat)
            else:
                small.append(f"repeat {i}'s p99 from {repeat.completed} requests (< {plan.trusted_requests})")
            # Under the interval rule the repeats' p99s are judged together below; the error rate always
            # here, per repeat.
            slos = plan.slos if enough and not intervals else untrusted_slos
            point = repeat.point()
            misses += [f"repeat {i}: {miss}" for miss in slos.misses(point)]
            for limit in LIMITS:
                bound = getattr(slos, limit.param)
                if limit.fails(bound, point) and (worst is None or _excess(limit, bound, point) > worst[0]):
                    worst = (_excess(limit, bound, point), limit.label)
        bounds: list[SloBound] = []
        if intervals and trusted and not small:
            for limit in TAIL_LIMITS:
                bound = getattr(plan.slos, limit.param)
                if bound is None:
                    continue
                groups = [np.asarray(r.samples(limit), dtype=float) for r in trusted]
                judged = SloBound.of(limit, bound, pooled_quantile_interval(groups, 0.99))
                if judged.estimate is None:  # no request measured it: it fails, as in the report
                    judged = judged.model_copy(update={"verdict": "misses"})
                bounds.append(judged)
                if judged.verdict == "misses":
                    misses.append(judged.text())
                    excess = math.inf if judged.estimate is None else judged.estimate / bound
                    if worst is None or excess > worst[0]:
                        worst = (excess, limit.label)
        common["bounds"] = tuple(bounds)
        if worst is not None:
            return Probe(**common, verdict="fail", misses=tuple(misses), limiting=worst[1]), False
        if small:
            return Probe(**common, verdict="untrusted", why="; ".join(small)), False
        open_ = [b for b in bounds if b.verdict == "undecided"]
        if not open_:
            return Probe(**common, verdict="pass"), False
        sent = max(r.completed + r.failed for r in repeats)
        batch = max(r.completed + r.failed for r in batches[-1].repeats)
        why = "; ".join(b.text() for b in open_) + f" after {sent} requests a repeat"
        if phase == "recheck":  # measured once more only to compare with the first probe: never made longer
            return Probe(**common, verdict="undecided", limiting=open_[0].metric, why=why), False
        extend = plan.max_requests is not None and sent + batch <= plan.max_requests
        why += ": measuring again" if extend else f" (the cap, max_requests={plan.max_requests})"
        return Probe(**common, verdict="undecided", limiting=open_[0].metric, why=why), extend

    def _following(self) -> float | None:
        plan, passing, failing = self.plan, self._passing, self._failing
        if self._stopped is not None or passing is None:  # stopped, or the lower bound failed
            return None
        if failing is None:  # still bracketing
            if passing >= plan.upper:
                return None
            grown = plan.normalise(passing * plan.growth)
            return min(max(grown, passing + 1) if plan.variable == "concurrency" else grown, plan.upper)
        if plan.precise(passing, failing):
            return None
        middle = math.sqrt(passing * failing) if plan.relative is not None else (passing + failing) / 2
        rounded = plan.normalise(middle)
        if plan.variable == "concurrency":  # the gap is 2 or more here: a whole number lies inside it
            return min(max(rounded, passing + 1), failing - 1)
        return rounded if passing < rounded < failing else middle

    def result(self) -> SearchResult:
        stopped, failing_probe = self._stopped, self._failing_probe
        outcome: Outcome
        if self._drift is not None:
            outcome = "drifted"
        elif self._saturated is not None:
            outcome = "saturated"
        elif stopped is not None:
            outcome = "untrusted"
            if stopped.verdict == "client_limited" or stopped.verdict == "probe_failed":
                outcome = stopped.verdict
        elif self._passing is None:
            outcome = "below_lower"
        elif self._failing is None:
            outcome = "upper_bound"
        else:
            outcome = "capacity"
        capacity = self._passing if outcome in ("capacity", "upper_bound", "saturated") else None
        measured = [p for p in self._probes if p.phase != "recheck"]
        fit = fit_capacity(self.plan, measured, self._host_sd) if capacity is not None else None
        if capacity is not None and fit is not None and fit.estimate is not None:
            # From every probe together: the largest passing load at or under the fitted crossing (a
            # probed load, so that the report prices the capacity from its own probe).
            below = [p.load for p in self._probes if p.verdict == "pass" and p.load <= fit.estimate]
            capacity = max(below) if below else capacity
        return SearchResult(
            plan=self.plan,
            outcome=outcome,
            capacity=capacity,
            capacity_low=fit.low if fit is not None else None,
            capacity_high=fit.high if fit is not None else None,
            capacity_method=fit.method if fit is not None else None,
            passing=self._passing,
            failing=self._failing,
            limiting=failing_probe.limiting if failing_probe is not None else None,
            stopped_at=(
                self._probes[0].load
                if self._drift
                else self._passing
                if self._saturated
                else stopped.load
                if stopped
                else None
            ),
            stopped_why=self._drift or self._saturated or (stopped.why if stopped is not None else None),
            probes=tuple(self._probes),
            probes_used=len(self._probes),
            server_s=sum(p.server_s for p in self._probes),
        )


def run_search(plan: SearchPlan, probe: Callable[[float], ProbeResult]) -> SearchResult:
    """Probe loads until the search is done; `probe(load)` runs `plan.repeats` repeats at `load`."""
    search = LoadSearch(plan)
    while (load := search.next_load()) is not None:
        search.record(probe(load))
    return search.result()
