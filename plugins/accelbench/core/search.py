"""Adaptive load search: the largest load one server sustains while its SLOs hold (its capacity).

Pure logic, no I/O: a `LoadSearch` says which load to probe next (`next_load()`) and judges what the
probe measured (`record(ProbeResult)`); `run_search(plan, probe)` drives it with a `probe(load)`
callable. The load generator's driver runs real probes through it, the unit tests synthetic ones.

The rule (one probe = `repeats` runs at one load, each judged by `Slos.misses`, the report's rule):

- A repeat *passes* when its client kept up, it completed at least `min_requests` requests (the
  report's sample-size rule: below `SAMPLE_WARNING_REQUESTS` a p99 rests on fewer than 10 requests
  beyond it) and it misses no SLO.
- A probe passes only if every repeat passes. A mean or median of the repeats would let one bad
  repeat through; requiring every repeat makes noise move the capacity down, never up.
- A probe *fails* when any repeat misses an SLO it can judge: the error rate on any number of
  requests (a failed request is a fact, not a tail estimate), a p99 latency only from enough requests.
- A probe with a client-limited repeat (the client could not send the requested rate,
  `accelbench.core.metrics.CLIENT_LIMITED_RATIO`) is never counted as the server's failure, and one
  whose only flaw is a p99 from too few requests is not trusted either way: the search stops there
  and reports "client-limited at X" (or "untrusted at X") instead of a capacity.

The algorithm: bracket first, growing from `lower` by `growth` (x2) until a probe fails or `upper`
passes; then bisect [largest pass, smallest fail] until the precision holds: the gap within `step`
(one step: 1 for an integer concurrency) or within `relative` x the passing load. With a relative
precision the midpoint is the geometric mean (each probe halves the gap's ratio), with a step the
arithmetic one. The probes needed grow with log(capacity / lower) + log(log(growth) / precision), a
fixed grid of the same precision over the same range needs log(upper / lower) / precision of them
(`SearchPlan.grid`).

What vLLM does: the pinned vLLM 0.32.0 has no `serve_sla`; its `vllm bench sweep serve_workload`
explores instead of searching: it measures concurrency 1 and concurrency = the dataset size,
estimates the variable from those (request throughput for a rate, Little's law, throughput x mean
E2EL, for a concurrency) and spreads `workload_iters` levels linearly between, with no SLO. Its
predecessor `serve_sla` (vLLM 0.11-0.14) searched one integer variable (request_rate or
max_concurrency) in [1, 65536]: the maximum first, then the minimum, then the root of a PCHIP
interpolation of the SLA margin (the largest relative excess over the criteria) through the probes
so far, until min failing - max passing <= 1, judging each probe by the mean of its runs. Taken from
it: the bracket as largest pass / smallest fail and the stop on its gap (made relative for request
rates, which are not integers), the variable names, one server for the whole search, and the margin
as the way to name the limiting metric. Different: no opening probe at the maximum (the longest and
most saturating probe, meaningless for a concurrency past the engine's batch, and 65536 req/s on a
CPU is a queue, not a measurement), so the bracket grows from below; bisection instead of the
interpolated root (a noisy, non-monotone margin cannot send it astray, and the probe count is
bounded by the precision; no scipy); every repeat instead of their mean; and the sample-size and
client-limited rules, which serve_sla does not have.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from accelbench.core.slos import LIMITS, SAMPLE_WARNING_REQUESTS, Limit, Slos

SearchVariable = Literal["concurrency", "request_rate"]
Phase = Literal["bracket", "bisect"]
Verdict = Literal["pass", "fail", "client_limited", "untrusted"]
# capacity: bracketed within the precision; upper_bound: `upper` passed (the capacity is at least it);
# below_lower: `lower` failed (no capacity in range); client_limited / untrusted: stopped at a probe.
Outcome = Literal["capacity", "upper_bound", "below_lower", "client_limited", "untrusted"]
ANSWERED_OUTCOMES: tuple[Outcome, ...] = ("capacity", "upper_bound", "below_lower")  # what the search found
MIN_P99_REQUESTS = 100  # below this a "p99" is the slowest request or close to it, never a tail estimate
_TAIL_LIMITS = tuple(limit for limit in LIMITS if limit.field.startswith("p99_"))  # need min_requests
UNITS = {"concurrency": "concurrent", "request_rate": "req/s"}  # a load of each variable, as said


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
        if all(getattr(self.slos, limit.param) is None for limit in LIMITS):
            problems.append("slos=none: a search needs at least one SLO to hold")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def level_kind(self) -> Literal["concurrency", "rate"]:
        """The variable as a load level's kind (`evidence.LevelKind`: `Level.kind`, the lake's
        `level_kind`; spelt out, as the spec and the evidence import this module)."""
        return "concurrency" if self.variable == "concurrency" else "rate"

    @property
    def unit(self) -> str:
        return UNITS[self.variable]

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
    """One repeat of a probe, as the load generator measured it."""

    completed: int = Field(ge=0)
    failed: int = Field(default=0, ge=0)
    p99_ttft_ms: float | None = None
    p99_tpot_ms: float | None = None
    p99_e2el_ms: float | None = None
    client_limited: bool | None = None  # None: not known (a concurrency level is never flagged)
    duration_s: float = Field(default=0.0, ge=0)  # seconds the server was under this repeat's load

    @property
    def error_rate(self) -> float | None:
        sent = self.completed + self.failed
        return self.failed / sent if sent else None

    def point(self) -> dict[str, float | None]:
        """The repeat as the point `Slos.misses` and `Limit.fails` read."""
        return {limit.field: getattr(self, limit.field, None) for limit in _TAIL_LIMITS} | {
            "error_rate": self.error_rate
        }


class ProbeResult(_Frozen):
    """What a probe measured: its load and every repeat."""

    load: float
    repeats: tuple[RepeatResult, ...] = Field(min_length=1)


class Probe(_Frozen):
    """One probe as the search judged it."""

    step: int  # 0 for the first probe of the search, then 1, 2, ...
    phase: Phase
    load: float
    verdict: Verdict
    misses: tuple[str, ...] = ()  # "repeat 2: p99 TTFT 2500 ms > 2000 ms", one per miss
    limiting: str | None = None  # the limit furthest over its bound in a failing probe ("p99 TTFT")
    why: str | None = None  # why a client_limited or untrusted probe stopped the search
    server_s: float = 0.0


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
    stopped_at: float | None = None  # the client-limited or untrusted probe's load
    probes: tuple[Probe, ...]
    probes_used: int
    server_s: float  # seconds under load over every repeat of every probe

    def summary(self) -> str:
        unit, cost = self.plan.unit, f"{self.probes_used} probes, {self.server_s:.0f} server-s"
        if self.outcome in ("client_limited", "untrusted"):
            why = self.probes[-1].why
            return f"{self.outcome.replace('_', '-')} at {self.stopped_at:g} {unit}: {why} ({cost})"
        if self.outcome == "below_lower":
            return f"no capacity: {self.failing:g} {unit} (the lower bound) misses {self.limiting} ({cost})"
        if self.outcome == "upper_bound":
            return f"capacity at least {self.capacity:g} {unit}: the upper bound passed ({cost})"
        return (
            f"capacity {self.capacity:g} {unit} (bracket [{self.passing:g}, {self.failing:g}], "
            f"limited by {self.limiting}; {cost})"
        )


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
        """The phase of the probe at `next_load()`: bracketing until a probe fails, then bisecting."""
        return "bracket" if self._failing is None else "bisect"

    def record(self, result: ProbeResult) -> Probe:
        """Judge the probe at `next_load()` and choose the next load."""
        if self._next is None:
            raise ValueError(f"load={result.load:g}: the search is over")
        if result.load != self._next:
            raise ValueError(f"load={result.load:g}: the search asked for {self._next:g}")
        if len(result.repeats) != self.plan.repeats:
            raise ValueError(f"repeats={len(result.repeats)}: the plan asks for {self.plan.repeats}")
        probe = self._judge(result, self.phase)
        self._probes.append(probe)
        if probe.verdict == "pass":
            self._passing = probe.load if self._passing is None else max(self._passing, probe.load)
        elif probe.verdict == "fail":
            if self._failing is None or probe.load < self._failing:
                self._failing, self._failing_probe = probe.load, probe
        else:
            self._stopped = probe
        self._next = self._following()
        return probe

    def _judge(self, result: ProbeResult, phase: Phase) -> Probe:
        plan, server_s = self.plan, sum(r.duration_s for r in result.repeats)
        common: dict[str, Any] = {"step": len(self._probes), "phase": phase, "load": result.load}
        common["server_s"] = server_s
        limited = [i for i, r in enumerate(result.repeats, 1) if r.client_limited]
        if limited:
            why = f"the client could not send the requested load in repeat {', '.join(map(str, limited))}"
            return Probe(**common, verdict="client_limited", why=why)
        untrusted_slos = dataclasses.replace(plan.slos, ttft_p99_ms=None, tpot_p99_ms=None, e2el_p99_ms=None)
        misses: list[str] = []
        worst: tuple[float, str] | None = None
        small: list[str] = []
        for i, repeat in enumerate(result.repeats, 1):
            trusted = repeat.completed >= plan.min_requests
            if not trusted:
                small.append(f"repeat {i}'s p99 from {repeat.completed} requests (< {plan.min_requests})")
            slos, point = (plan.slos if trusted else untrusted_slos), repeat.point()
            misses += [f"repeat {i}: {miss}" for miss in slos.misses(point)]
            for limit in LIMITS:
                bound = getattr(slos, limit.param)
                if limit.fails(bound, point) and (worst is None or _excess(limit, bound, point) > worst[0]):
                    worst = (_excess(limit, bound, point), limit.label)
        if worst is not None:
            return Probe(**common, verdict="fail", misses=tuple(misses), limiting=worst[1])
        if small:
            return Probe(**common, verdict="untrusted", why="; ".join(small))
        return Probe(**common, verdict="pass")

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
        if stopped is not None:
            outcome = "client_limited" if stopped.verdict == "client_limited" else "untrusted"
        elif self._passing is None:
            outcome = "below_lower"
        elif self._failing is None:
            outcome = "upper_bound"
        else:
            outcome = "capacity"
        return SearchResult(
            plan=self.plan,
            outcome=outcome,
            capacity=self._passing if outcome in ("capacity", "upper_bound") else None,
            passing=self._passing,
            failing=self._failing,
            limiting=failing_probe.limiting if failing_probe is not None else None,
            stopped_at=stopped.load if stopped is not None else None,
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
