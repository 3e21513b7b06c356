"""The load search's plan and results: what a spec carries (`SearchPlan`) and what a search found
(`SearchResult`, its `Probe`s, each repeat's `RepeatResult`), with the words a capacity is said in.

In `core` because the spec and the evidence carry them (every stage reads them); the search itself, its
statistics and its state machine are in `accelbench.search`."""

from __future__ import annotations

import math
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

from accelbench.core.intervals import CONFIDENCE, Interval, SloVerdict, slo_verdict, widened
from accelbench.core.intervals import min_requests as bounding_requests
from accelbench.core.slos import LIMITS, SAMPLE_WARNING_REQUESTS, Limit, Slos

# time_scale: a timed trace's pace (its headroom: how many times the recorded traffic a server holds)
SearchVariable = Literal["concurrency", "request_rate", "time_scale"]
Phase = Literal["bracket", "bisect", "recheck"]  # recheck: the first probe measured again at the end
# A probe's verdict on its load: pass (every SLO meets, `core.intervals.SloVerdict`), fail (one misses),
# undecided: a p99's interval still held its SLO's limit when the probe reached `max_requests`; or where it
# stopped. Not the SLO words (a load passes or fails; the evidence's probes keep these values).
ProbeVerdict = Literal["pass", "fail", "undecided", "client_limited", "untrusted", "probe_failed"]
# capacity: bracketed within the precision; upper_bound: `upper` passed (the capacity is at least it);
# below_lower: `lower` failed (no capacity in range); saturated: bracketing stopped at a passing probe past
# the server's throughput (`accelbench.search.statistics.saturation`: the capacity is at least it);
# client_limited / untrusted / probe_failed: stopped at a probe (probe_failed: its level failed, no usable
# result: the bracket found before it is kept); drifted: the first probe measured again at the end disagreed
# with itself beyond both intervals (no capacity).
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

    def looks(self, batch: int | None = None) -> int:
        """The most times one probe's verdict is judged: its first measurement and each time it is measured
        again, a repeat growing by `batch` requests (its first measurement's; `min_requests`, the fewest,
        when not given) while it stays within `max_requests`. 1 under the point rule. Known before the
        first look (the driver's level size, not what it measures), so a correction over it is fixed in
        advance."""
        if self.max_requests is None:
            return 1
        return max(1, self.max_requests // max(batch or self.min_requests, 1))

    def look_confidence(self, batch: int | None = None) -> float:
        """The confidence each look judges a probe's p99 intervals at: Bonferroni over its `looks`, each
        at 1 - 0.05 / looks, so the chance that any look of a probe decides wrongly stays within 5% however
        often it is measured again (an undecided probe re-judged at 95% each time spends 5% per look)."""
        return 1 - (1 - CONFIDENCE) / self.looks(batch)

    def unbounded(self, batch: int) -> str | None:
        """Why probes measured `batch` requests at a time could never be shown to meet a p99 limit, or
        None: with `max_requests` a repeat reaches batch x looks requests, and each look's corrected
        confidence (`look_confidence`) needs more than that to bound a p99 from above (505 requests at
        98.75%, 4 looks), so every probe would end undecided at the cap. Says the smallest cap that works;
        the caller names the field (`max_requests`, or a request's `search_max_requests`)."""
        if self.max_requests is None or all(getattr(self.slos, limit.param) is None for limit in TAIL_LIMITS):
            return None
        looks = self.looks(batch)
        need = bounding_requests(0.99, self.look_confidence(batch))
        if batch * looks >= need:
            return None
        cap = smallest_cap(batch)
        return (
            f"a probe of {batch} requests a measurement is judged up to"
            f" {looks} times, each at {self.look_confidence(batch):.2%} (Bonferroni), where a p99 needs"
            f" {need} requests to be bounded from above: no probe could be shown to meet a p99 limit; give"
            f" max_requests >= {cap}"
        )

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


def smallest_cap(batch: int) -> int:
    """The smallest `max_requests` at which probes of `batch` requests a measurement can bound a p99 from
    above at every look's corrected confidence (`SearchPlan.look_confidence`): 600 for 100, 400 for 400."""
    cap = batch
    while cap < bounding_requests(0.99, 1 - (1 - CONFIDENCE) / (cap // batch)):
        cap += batch
    return cap


class SloBound(_Frozen):
    """One tail SLO of a probe under the interval rule: the p99's interval over the probe's requests
    (`accelbench.core.intervals.pooled_quantile_interval`, at the look's confidence), widened by the host's
    run-to-run spread where one run's requests cannot show it (`low`/`high`; the requests' own: `own_low`/
    `own_high`), and what it says of the limit."""

    metric: str  # "p99 TTFT"
    limit: float
    estimate: float | None
    low: float | None
    high: float | None
    verdict: SloVerdict
    method: str
    own_low: float | None = None  # before the widening (the same as low/high without one)
    own_high: float | None = None

    @classmethod
    def of(
        cls, limit: Limit, bound: float, interval: Interval, widen: float = 0.0, why: str = ""
    ) -> SloBound:
        """Judged on `interval` moved out by `widen` on the log scale (`intervals.widened`); `why` says
        what the widening is."""
        low = widened(interval.estimate, interval.low, -widen) if interval.low is not None else None
        high = widened(interval.estimate, interval.high, widen) if interval.high is not None else None
        judged = Interval(interval.estimate, low, high, interval.confidence, interval.method)
        verdict = slo_verdict(judged, bound) or "undecided"
        return cls(
            metric=limit.label,
            limit=bound,
            estimate=interval.estimate,
            low=low,
            high=high,
            verdict=verdict,
            method=interval.method + (f", {why}" if widen and why else ""),
            own_low=interval.low,
            own_high=interval.high,
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
    verdict: ProbeVerdict
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
    # The upper end is a load no probe judged to miss, only one the search could not show meeting (undecided
    # at the cap): said as "4 undecided" beside it.
    capacity_high_undecided: bool = False

    def capacity_text(self) -> str:
        """ "26 concurrent [24, 28] at 95%" (an open end: "-"; an undecided upper end: ", 28 undecided"),
        or "26 concurrent" without an interval."""
        assert self.capacity is not None
        return capacity_words(
            self.capacity,
            self.plan.unit,
            self.capacity_low,
            self.capacity_high,
            interval=self.capacity_method is not None,
            high_undecided=self.capacity_high_undecided,
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
                f"; bracket so far [{bound_text(self.passing)}, {bound_text(self.failing)}]"
                if self.passing is not None or self.failing is not None
                else ""
            )
            return f"probe failed at {self.stopped_at:g} {unit}: {self.stopped_why}{so_far} ({cost})"
        if self.outcome == "below_lower":  # the lower bound missed, or stayed undecided at the cap
            lower = self.plan.lower
            lowest = [p for p in self.probes if p.load == lower and p.phase != "recheck"]
            how = "is undecided at the cap on" if lowest and lowest[-1].verdict == "undecided" else "misses"
            said = f"no capacity: {lower:g} {unit} (the lower bound) {how} {self.limiting}"
            if self.capacity_method is not None:  # undecided: where the capacity may lie, none shown
                high = bound_text(self.capacity_high) + (" undecided" if self.capacity_high_undecided else "")
                said += f"; 95% interval [{bound_text(self.capacity_low)}, {high}]"
            return f"{said} ({cost})"
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
    high_undecided: bool = False  # `high` is the smallest load not shown to meet, none judged to miss


UNDECIDED_HIGH = "undecided"  # the words after an upper end no probe judged to miss ("4 undecided")


def says_high_undecided(method: str | None, high: float | None) -> bool:
    """Whether a capacity's method (the lake's `capacity_method`) says its upper end is undecided, not a
    load judged to miss (`accelbench.search.statistics.fit_capacity`): no column of its own, schema kept."""
    return high is not None and f"upper end {high:g} {UNDECIDED_HIGH}" in (method or "")


def bound_text(load: float | None) -> str:
    return "-" if load is None else f"{load:g}"


def capacity_words(
    capacity: float,
    unit: str,
    low: float | None = None,
    high: float | None = None,
    *,
    interval: bool = True,
    high_undecided: bool = False,
) -> str:
    """ "26 concurrent [24, 28] at 95%" (an open end: "-"; an upper end undecided at the cap, not judged to
    miss: "26 concurrent [24, 28] at 95%, 28 undecided"); "26 concurrent" for a search without an interval
    (the point rule: `interval` false). One wording for the search's log, the campaign's and the lake's
    rows."""
    text = f"{capacity:g} {unit}"
    if not interval:
        return text
    text += f" [{bound_text(low)}, {bound_text(high)}] at 95%"
    return text + (f", {high:g} {UNDECIDED_HIGH}" if high_undecided and high is not None else "")
