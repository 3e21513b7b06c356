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
run-to-run spread that the recheck below shows (`statistics.host_spread`: a within-run interval knows only
its own requests): "26 concurrent [24, 28] at 95%"); and drift: the first probe is measured again at the end
("recheck"), and when the two lie more than 2x apart beyond their intervals (`accelbench.core.drift`: a
within-run interval does not hold how one host's runs differ) the outcome is "drifted" with both figures,
not a capacity. And
over-saturation: bracketing stops at a passing probe when the median latency grew with the load by a log-log
slope over 1 (throughput falling), tested one-sided at 95% (`statistics.saturation`): outcome "saturated", at
least that load. The bracket stays the search's way to choose loads; the fit is what it reports.

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
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from accelbench.core.changes import PRIOR_SPREAD, Spread
from accelbench.core.intervals import pooled_quantile_interval
from accelbench.core.search_plan import (
    TAIL_LIMITS,
    Outcome,
    Phase,
    Probe,
    ProbeResult,
    RepeatResult,
    SearchPlan,
    SearchResult,
    SloBound,
)
from accelbench.core.slos import LIMITS, Limit
from accelbench.search.statistics import (
    fit_capacity,
    host_spread,
    merged_repeats,
    probe_drift,
    run_widening,
    saturation,
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

    def __init__(
        self,
        plan: SearchPlan,
        earlier: Mapping[str, Sequence[Spread]] | None = None,
        prior: Spread | None = PRIOR_SPREAD,
    ) -> None:
        """`earlier`: the judged p99s' run-to-run spreads from the lake's earlier runs of this configuration
        on this host (keyed by the limit's label, "p99 TTFT"), and `prior` the spread assumed before any
        (`core.changes.PRIOR_SPREAD`): both pooled with this search's own runs of one load measured twice."""
        self.plan = plan
        self._earlier = earlier
        self._prior = prior
        self._undecided: list[float] = []  # loads left undecided at the cap: no end of the bracket
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
        # Every measurement of each load (a probe measured again, the first probe and its recheck): the runs
        # the host's run-to-run spread is pooled from (`host_spread`).
        self._measured: dict[float, list[list[RepeatResult]]] = {}

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
        merged = merged_repeats(self._batches)
        self._measured.setdefault(probe.load, []).extend(list(b.repeats) for b in self._batches)
        self._batches = []
        self._probes.append(probe)
        if self._rechecking:
            assert self._first is not None
            self._drift = probe_drift(self.plan, self._first, merged, probe.load)
            self._next = None
            return probe
        if self._first is None:
            self._first = merged
        if self.phase == "bracket" and probe.verdict == "pass" and self.plan.max_requests is not None:
            earlier, self._last_pass = self._last_pass, (probe.load, merged)
            if earlier is not None and (why := saturation(self.plan, earlier, (probe.load, merged))):
                self._saturated = why
        if probe.verdict == "pass":
            self._passing = probe.load if self._passing is None else max(self._passing, probe.load)
        elif probe.verdict == "fail":
            if self._failing is None or probe.load < self._failing:
                self._failing, self._failing_probe = probe.load, probe
        elif probe.verdict == "undecided":  # at the cap: neither end of the bracket; the search goes around
            self._undecided.append(probe.load)
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
        repeats = merged_repeats(batches)
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
        first_batch = max(r.completed + r.failed for r in batches[0].repeats)
        if intervals and trusted and not small:
            # The host's run-to-run spread so far (this load's runs included), over this probe's runs.
            spread = self._spread_with(batches)
            widen = run_widening(plan, spread, len(batches), plan.look_confidence(first_batch))
            why = f"widened by the host's run-to-run spread ({spread.text()}) over {len(batches)} run(s)"
            for limit in TAIL_LIMITS:
                bound = getattr(plan.slos, limit.param)
                if bound is None:
                    continue
                groups = [np.asarray(r.samples(limit), dtype=float) for r in trusted]
                # Each look at the plan's corrected confidence: a probe is judged again each time it is
                # measured again (`SearchPlan.look_confidence`, Bonferroni over its most looks).
                interval = pooled_quantile_interval(groups, 0.99, plan.look_confidence(first_batch))
                judged = SloBound.of(limit, bound, interval, widen, why)
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
        """The next load: growing from the highest load not shown to miss until one is (loads undecided
        at the cap are gone around, not taken as an end), then the middle of the widest gap between the
        loads measured inside the bracket, until the bracket is as precise as the plan asks or no load
        is left to measure inside it."""
        plan, passing, failing = self.plan, self._passing, self._failing
        if self._stopped is not None:
            return None
        # Nothing shown to meet: the lower bound failed (no capacity), or a load above a lower bound left
        # undecided at the cap was judged to miss (the interval is [-, that load]).
        if passing is None and (failing is not None or not self._undecided):
            return None
        if failing is None:  # still bracketing, past loads undecided at the cap (the lower bound's too)
            top = max(load for load in (passing, *self._undecided) if load is not None)
            if top >= plan.upper:
                return None
            grown = plan.normalise(top * plan.growth)
            return min(max(grown, top + 1) if plan.variable == "concurrency" else grown, plan.upper)
        assert passing is not None  # both ends known: bisecting
        if passing >= failing or plan.precise(passing, failing):
            return None
        inside = sorted({passing, failing, *(u for u in self._undecided if passing < u < failing)})
        gaps = [(a, b) for a, b in itertools.pairwise(inside) if not plan.precise(a, b)]
        if not gaps:
            return None
        widest = max(gaps, key=lambda g: math.log(g[1] / g[0]) if plan.relative is not None else g[1] - g[0])
        return self._middle(*widest)

    def _middle(self, low: float, high: float) -> float:
        """A load between `low` and `high` (both measured): the middle, geometric for a relative precision."""
        plan = self.plan
        middle = math.sqrt(low * high) if plan.relative is not None else (low + high) / 2
        rounded = plan.normalise(middle)
        if plan.variable == "concurrency":  # the gap is 2 or more here: a whole number lies inside it
            return min(max(rounded, low + 1), high - 1)
        return rounded if low < rounded < high else middle

    def _spread_with(self, batches: Sequence[ProbeResult]) -> Spread:
        """The host's spread (`spread`) with the measurements of the probe being judged."""
        measured = {load: list(runs) for load, runs in self._measured.items()}
        measured.setdefault(batches[0].load, []).extend(list(b.repeats) for b in batches)
        return host_spread(self.plan, list(measured.values()), self._earlier, self._prior)

    def spread(self) -> Spread:
        """The host's run-to-run spread of the judged p99s over every load measured more than once so
        far, pooled with the earlier runs' and the prior (`statistics.host_spread`)."""
        return host_spread(self.plan, list(self._measured.values()), self._earlier, self._prior)

    def result(self) -> SearchResult:
        """What the search found."""
        stopped, failing_probe, failing = self._stopped, self._failing_probe, self._failing
        if failing is None:
            # No load judged to miss: the bracket ends at the lowest load above it left undecided.
            floor = self._passing if self._passing is not None else -math.inf
            above = [p for p in self._probes if p.verdict == "undecided" and p.load > floor]
            failing_probe = min(above, key=lambda p: p.load) if above else None
            failing = failing_probe.load if failing_probe is not None else None
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
        elif failing is None:
            outcome = "upper_bound"
        else:
            outcome = "capacity"
        capacity = self._passing if outcome in ("capacity", "upper_bound", "saturated") else None
        measured = [p for p in self._probes if p.phase != "recheck"]
        # No capacity shown, but the lower bound not shown to miss either (undecided at the cap): the
        # interval still says where the capacity may lie, its lower end open.
        undecided_lower = outcome == "below_lower" and bool(self._undecided)
        fit = (
            fit_capacity(self.plan, measured, self.spread())
            if capacity is not None or undecided_lower
            else None
        )
        if capacity is not None and fit is not None and fit.estimate is not None:
            # From every probe together: the largest load shown to meet at or under the fitted crossing (a
            # passing probe, or the fit's lower end: a probed load, so that the report prices the capacity
            # from its own probe).
            shown = [p.load for p in self._probes if p.verdict == "pass"] + [fit.low] * (fit.low is not None)
            below = [load for load in shown if load is not None and load <= fit.estimate]
            capacity = max(below) if below else capacity
        return SearchResult(
            plan=self.plan,
            outcome=outcome,
            capacity=capacity,
            capacity_low=fit.low if fit is not None else None,
            capacity_high=fit.high if fit is not None else None,
            capacity_method=fit.method if fit is not None else None,
            capacity_high_undecided=fit is not None and fit.high_undecided,
            passing=self._passing,
            failing=failing,
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
