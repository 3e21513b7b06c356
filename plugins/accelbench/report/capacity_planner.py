"""Capacity planner: how many replicas of each measured configuration serve a target request rate within
the SLOs, and what they cost a month.

One rule, two implementations: `plan_capacity` and `left_out` here are the reference (tested against
hand computations), and the report page runs the same rule in inline JavaScript
(templates/planner.html.j2) so that changing an SLO re-ranks at once, offline, without rerunning a DAG.
Tests check that the two agree.

The rule, per configuration (``configuration_id``: one server configuration, workload and host):

- only levels measured on the instance type itself (``measured_on_instance`` is True) count; a
  configuration measured elsewhere (a laptop, a CI runner) is left out: its prices would not apply;
- a level qualifies when it meets every given limit (None: no limit; a missing latency fails its
  limit, a missing error rate does not, as in the report's best-level table) and has a request rate
  above zero. A latency limit is met when the figure's 95% interval is at or under it, missed when the
  interval is wholly over it, and otherwise undecided (`accelbench.report.slos.limit_verdict`; a figure
  without an interval is judged on its value, the error rate on the requests that failed): an undecided
  level never qualifies. The row names the configuration's undecided levels above the one used
  (``undecided_above``), a left-out configuration its undecided levels, each with what more measurement
  would decide it (`accelbench.report.slos.to_decide`);
- a level that is a load search's capacity (``searched_capacity`` set: `accelbench.report.builder.
  build_points`) is used when it qualifies (the one with the highest ``request_throughput`` if
  several do, the first on a tie), even where a higher level qualifies too: the search held every
  repeat to its SLOs, where the page judges medians, so its capacity is the load the configuration
  holds reliably; where limits looser than the search's would allow more, the plan stays
  conservative. Holding the page's limits is the test: the page's limits change at once, offline,
  and the search's own (``capacities.slo_*``) are shown beside it in the capacities table;
- otherwise (no searched capacity, or it misses a limit) the qualifying level with the highest
  ``request_throughput`` is used (the first one on a tie);
- the row shows the configuration's searched capacities with their brackets (``searched_capacity``:
  the one used, else every one, with ``uses_search`` False);
- replicas = ceil(target_rps / that rate); monthly cost = replicas x USD per hour x HOURS_PER_MONTH,
  on-demand and spot; headroom = replicas x rate / target_rps;
- ranked by on-demand monthly cost, unpriced last, ties by spot cost (unpriced last), then by label;
- with ``require_quality`` (the default, as the headline), a configuration of a quantization matrix that
  failed or is undecided on the quality gate (``quality_gate``, `accelbench.report.quality`) is left out,
  with its verdict and why; one without a gate is planned as before.

With a daily traffic profile (`Profile`: the target rate at the peak for `peak_hours` of each day,
`trough_rps` the rest of the day, never fewer than `min_replicas` replicas, 0 allowing scale to zero when
the trough has no traffic): peak replicas = max(min_replicas, ceil(target_rps / rate)), trough replicas =
max(min_replicas, ceil(trough_rps / rate)), and the monthly cost follows the day: (peak replicas x
peak_hours + trough replicas x (24 - peak_hours)) x USD per hour x HOURS_PER_MONTH / 24. A replica started
for the peak makes its first users wait its start-up, the configuration's measured `startup_s` (the median
`ready_s` of its servers' start-ups, the first level that has one): a configuration that scales (fewer
replicas in the trough) is flagged (`cold_start_over_limit` True) when that start-up is over the profile's
`cold_start_limit_s` (None: it does not scale, no limit was given, or no start-up was measured); it is
still ranked, by cost.

A month is HOURS_PER_MONTH = 730 hours (365 days x 24 h / 12), the convention the AWS Pricing
Calculator (https://calculator.aws) and AWS's pricing examples use for monthly estimates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from accelbench.core.intervals import CONFIDENCE, Interval
from accelbench.report.records import Record, columns, figure, json_schema, record
from accelbench.report.slos import (
    JUDGED_ON_ESTIMATE,
    LIMITS,
    QUANTILES,
    Slos,
    limit_verdict,
    slo_judgement,
    t_quantiles,
)

HOURS_PER_MONTH = 730
HOURS_PER_DAY = 24
DEFAULT_PEAK_HOURS = 8.0  # the form's start for a daily profile: a working day at peak
DEFAULT_MIN_REPLICAS = 1
DEFAULT_TARGET_RPS = 10.0  # what the form starts with when the report names no target rate
# Whether a configuration must pass the quality gate to be planned (the form's box starts so): the headline's
# rule. A configuration outside a quantization matrix has no gate to pass.
REQUIRE_QUALITY = True


@dataclass(frozen=True, slots=True)
class PlannerPoint:
    """What the page needs of each point, and no more (its JSON goes into every report): a point of the
    `points` table as the planner judges and plans it. Its JSON is `record(...)` of this type, and the JSON
    Schema the page's script is checked against is generated from it (`planner_schema`)."""

    point_id: str
    configuration_id: str
    configuration: str
    model: str | None
    model_short: str
    workload: str
    level: str
    request_throughput: float | None
    p99_ttft_ms: Interval
    p99_tpot_ms: Interval
    p99_e2el_ms: Interval
    error_rate: Interval
    latency_interval_basis: str | None
    latency_interval_n: int | None
    repeats: int | None
    measured_on_instance: bool | None
    host: str | None
    on_demand_usd_per_hour: float | None
    spot_usd_per_hour: float | None
    sample_warning: str | None
    searched_capacity: str | None
    host_drift: str | None
    quality_gate: str | None
    quality_why: str | None
    startup_s: float | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PlannerPoint:
        """From a row of the `points` table (its files' columns: `accelbench.report.records`); NaN and
        infinities are None (not JSON: the page's JSON.parse would refuse the whole report's data)."""
        values: dict[str, Any] = {}  # the fields by name, each read by the type's own column names
        for f in fields(cls):
            if f.name in _FIGURES:
                found = figure(row, f.name)
                estimate, low, high = (_json_safe(v) for v in (found.estimate, found.low, found.high))
                values[f.name] = Interval(estimate, low, high, CONFIDENCE, "")
            else:
                values[f.name] = _json_safe(row.get(f.name))
        return cls(**values)

    def figure(self, name: str) -> Interval:
        found = getattr(self, name)
        if not isinstance(found, Interval):
            raise TypeError(f"{name} is not a figure the planner judges")
        return found


_FIGURES = frozenset(limit.field for limit in LIMITS)
PLANNER_FIELDS = columns(PlannerPoint)  # the JSON's keys, in order


def planner_schema() -> dict[str, Any]:  # a JSON Schema document
    """The JSON Schema of a row of the page's planner data, from `PlannerPoint`."""
    return json_schema(PlannerPoint, "The capacity planner's point (accelbench.report.capacity_planner)")


@dataclass(frozen=True)
class Profile:
    """A day of traffic (the module's docstring): the target rate for `peak_hours`, `trough_rps` the rest."""

    trough_rps: float
    peak_hours: float
    min_replicas: int = 1
    cold_start_limit_s: float | None = None

    def check(self, target_rps: float) -> None:
        def number(x: Any) -> bool:
            return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)

        if not (number(self.trough_rps) and 0 <= self.trough_rps <= target_rps):
            raise ValueError(f"the trough rate must be between 0 and the peak's, not {self.trough_rps!r}")
        if not (number(self.peak_hours) and 0 < self.peak_hours <= HOURS_PER_DAY):
            raise ValueError(f"the hours at the peak must be above 0 and at most 24, not {self.peak_hours!r}")
        if not (
            number(self.min_replicas)
            and self.min_replicas >= 0
            and self.min_replicas == int(self.min_replicas)
        ):
            raise ValueError(
                f"the minimum replicas must be a whole number of 0 or more, not {self.min_replicas!r}"
            )
        if self.cold_start_limit_s is not None and not (
            number(self.cold_start_limit_s) and self.cold_start_limit_s >= 0
        ):
            raise ValueError(f"the cold-start limit must be 0 s or more, not {self.cold_start_limit_s!r}")


def _json_safe(value: Any) -> Any:
    """NaN and infinities are not JSON: the page's JSON.parse would refuse the whole report's data."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def planner_rows(points: Iterable[Mapping[str, Any]]) -> list[Record]:
    """The points as the page gets them: `PlannerPoint`'s columns only, JSON-safe, in the given order."""
    return [record(PlannerPoint.from_row(p)) for p in points]


def planner_context(
    points: Iterable[Mapping[str, Any]],
    *,
    target_rps: float = DEFAULT_TARGET_RPS,
    ttft_p99_ms: float | None = None,
    tpot_p99_ms: float | None = None,
    e2el_p99_ms: float | None = None,
    max_error_rate: float | None = None,
) -> dict[str, Any]:  # a JSON document: the page's script reads it
    """The `planner` variable of planner.html.j2: the rows, the month, the form's starting values and
    the limits table."""
    return {
        "rows": planner_rows(points),
        "hours_per_month": HOURS_PER_MONTH,
        "defaults": {
            "target_rps": target_rps,
            "ttft_p99_ms": ttft_p99_ms,
            "tpot_p99_ms": tpot_p99_ms,
            "e2el_p99_ms": e2el_p99_ms,
            "max_error_rate": max_error_rate,
            "require_quality": REQUIRE_QUALITY,
            "trough_rps": None,  # blank: the target all day
            "peak_hours": DEFAULT_PEAK_HOURS,
            "min_replicas": DEFAULT_MIN_REPLICAS,
            "cold_start_limit_s": None,
        },
        "limits": [asdict(limit) for limit in LIMITS],
        "judged_on_estimate": list(JUDGED_ON_ESTIMATE),
        "confidence": CONFIDENCE,
        "quantiles": QUANTILES,
        "t_quantiles": list(t_quantiles()),
    }


def _monthly(
    replicas: int, usd_per_hour: float | None, trough: int | None = None, profile: Profile | None = None
) -> float | None:
    """Always-on replicas, or the day's replica-hours of a profile, a month. The JavaScript computes in this
    order too, so both give the same float."""
    if usd_per_hour is None:
        return None
    if profile is None or trough is None:
        return replicas * usd_per_hour * HOURS_PER_MONTH
    daily = replicas * profile.peak_hours + trough * (HOURS_PER_DAY - profile.peak_hours)
    return daily * usd_per_hour * HOURS_PER_MONTH / HOURS_PER_DAY


def _limits(*values: float | None) -> dict[str, float | None]:
    """The limits by parameter name; `values` in the order of LIMITS (and of the functions' signatures)."""
    return dict(zip((limit.param for limit in LIMITS), values, strict=True))


def _check_target(target_rps: float) -> None:
    if not (isinstance(target_rps, int | float) and math.isfinite(target_rps) and target_rps > 0):
        raise ValueError(f"the target request rate must be a number above 0, not {target_rps!r}")


def _qualifying(
    measured: list[PlannerPoint], limits: Mapping[str, float | None]
) -> tuple[PlannerPoint | None, PlannerPoint | None, dict[str, int], list[PlannerPoint]]:
    """(the qualifying level with the highest request rate, the searched capacity among the qualifying
    levels with the highest rate, how many levels missed each limit, the levels that miss none but are
    undecided on one); the first one on a tie."""
    failures = dict.fromkeys((limit.label for limit in LIMITS), 0) | {"no request rate": 0}
    best = searched = None
    undecided = []
    for p in measured:
        ok, unsure = True, False
        for limit in LIMITS:
            verdict = limit_verdict(limit, limits.get(limit.param), p)
            if verdict == "misses":
                failures[limit.label] += 1
                ok = False
            unsure = unsure or verdict == "undecided"
        rate = p.request_throughput
        if rate is None or rate <= 0:
            failures["no request rate"] += 1
            ok = False
        if not ok or rate is None:
            continue
        if unsure:
            undecided.append(p)
            continue
        if best is None or rate > (best.request_throughput or 0):
            best = p
        if p.searched_capacity and (searched is None or rate > (searched.request_throughput or 0)):
            searched = p
    return best, searched, failures, undecided


def _undecided_words(levels: list[PlannerPoint], limits: Mapping[str, float | None]) -> str | None:
    """ "c8: p99 TTFT 1900 ms [1700, 2300] vs 2000 ms: about 5 repeats (now 2) would decide it | ...";
    None for no level."""
    slos = Slos(**limits)
    words = [f"{p.level}: {'; '.join(slo_judgement(p, slos)[1])}" for p in levels]
    return " | ".join(words) or None


def _ranked_row(
    measured: list[PlannerPoint],
    best: PlannerPoint,
    searched: PlannerPoint | None,
    target_rps: float,
    undecided: str | None,
    profile: Profile | None = None,
) -> dict[str, Any]:  # a JSON row: the page's script makes the same rows, the tests compare them
    """The plan of one configuration on its level: the searched capacity that holds the limits, whatever
    else does, else `best`; unranked yet."""
    if searched is not None:
        best, shown = searched, searched.searched_capacity
    else:  # the configuration's searched capacities, if any, though not used
        labels = dict.fromkeys(p.searched_capacity for p in measured if p.searched_capacity)
        shown = "; ".join(labels) or None
    rate = best.request_throughput or 0.0  # a qualifying level has a rate above 0
    replicas = math.ceil(target_rps / rate)
    trough = over = None
    startup = next((p.startup_s for p in measured if p.startup_s is not None), None)
    if profile is not None:
        replicas = max(profile.min_replicas, replicas)
        trough = max(profile.min_replicas, math.ceil(profile.trough_rps / rate))
        if trough < replicas and profile.cold_start_limit_s is not None and startup is not None:
            over = startup > profile.cold_start_limit_s
    return {
        "model": best.model,
        "point_id": best.point_id,
        "level": best.level,
        "request_throughput": rate,
        "replicas": replicas,
        "trough_replicas": trough,
        "on_demand_usd_per_month": _monthly(replicas, best.on_demand_usd_per_hour, trough, profile),
        "spot_usd_per_month": _monthly(replicas, best.spot_usd_per_hour, trough, profile),
        "startup_s": startup,
        "cold_start_over_limit": over,
        "headroom": replicas * rate / target_rps,
        "sample_warning": best.sample_warning,
        "searched_capacity": shown,
        "uses_search": searched is not None,
        "undecided_above": undecided,
    }


def _order(row: dict[str, Any]) -> tuple[Any, ...]:  # a plan's JSON row (_ranked_row)
    """On-demand monthly cost, unpriced last; then spot, unpriced last; then the label."""
    od, spot = row["on_demand_usd_per_month"], row["spot_usd_per_month"]
    return (od is None, od or 0.0, spot is None, spot or 0.0, row["configuration"], row["configuration_id"])


def _quality_refused(levels: list[PlannerPoint]) -> str | None:
    """Why a configuration fails the quality gate (a quantization matrix's configuration that did not pass:
    `accelbench.report.quality`), None when it passed or has no quality to pass."""
    for p in levels:
        if p.quality_gate not in (None, "pass"):
            return f"quality gate {p.quality_gate}: {p.quality_why or ''}"
    return None


def _plan(
    points: Iterable[Mapping[str, Any]],
    target_rps: float,
    limits: Mapping[str, float | None],
    require_quality: bool = REQUIRE_QUALITY,
    profile: Profile | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:  # JSON rows, as the page's script makes them
    """(ranked rows, left-out configurations with why), the rule of the module docstring."""
    _check_target(target_rps)
    if profile is not None:
        profile.check(target_rps)
    configurations: dict[str, list[PlannerPoint]] = {}
    for row in points:
        p = PlannerPoint.from_row(row)
        configurations.setdefault(p.configuration_id, []).append(p)
    ranked, excluded = [], []
    for cid, levels in configurations.items():
        first = levels[0]
        about = {
            "configuration_id": cid,
            "configuration": first.configuration,
            "model_short": first.model_short,
            "workload": first.workload,
        }
        measured = [p for p in levels if p.measured_on_instance is True]
        if require_quality and (refused := _quality_refused(levels)):
            excluded.append(about | {"reason": refused})
            continue
        if not measured:
            host = first.host or "another host"
            excluded.append(about | {"reason": f"not priced: measured on {host}"})
            continue
        best, searched, failures, undecided = _qualifying(measured, limits)
        if best is None:
            failed = ", ".join(f"{name} ({n} of {len(measured)} levels)" for name, n in failures.items() if n)
            unsure = _undecided_words(undecided, limits)
            reasons = [*([f"fails {failed}"] if failed else []), *([f"undecided {unsure}"] if unsure else [])]
            excluded.append(about | {"reason": "; ".join(reasons)})
            continue
        used = (searched or best).request_throughput or 0.0
        above = _undecided_words([p for p in undecided if (p.request_throughput or 0.0) > used], limits)
        ranked.append(about | _ranked_row(measured, best, searched, target_rps, above, profile))
    ranked.sort(key=_order)
    for rank, row in enumerate(ranked, 1):
        row["rank"] = rank
    return ranked, excluded


def plan_capacity(
    points: Iterable[Mapping[str, Any]],
    target_rps: float,
    ttft_p99_ms: float | None = None,
    tpot_p99_ms: float | None = None,
    e2el_p99_ms: float | None = None,
    max_error_rate: float | None = None,
    require_quality: bool = REQUIRE_QUALITY,
    profile: Profile | None = None,
) -> list[dict[str, Any]]:  # JSON rows, as the page's script makes them
    """Per configuration that can meet the limits, the level used, replicas and monthly costs, ranked
    (see the module docstring). `max_error_rate` is a fraction (0.01 = 1%); `profile`: a day of traffic
    whose peak is `target_rps` (None: `target_rps` all day)."""
    limits = _limits(ttft_p99_ms, tpot_p99_ms, e2el_p99_ms, max_error_rate)
    return _plan(points, target_rps, limits, require_quality, profile)[0]


def left_out(
    points: Iterable[Mapping[str, Any]],
    target_rps: float,
    require_quality: bool = REQUIRE_QUALITY,
    **limits: float | None,
) -> list[dict[str, Any]]:  # JSON rows, as the page's script makes them
    """The configurations `plan_capacity` does not rank, each with the reason, in input order; the
    limits are plan_capacity's, by name."""
    unknown = set(limits) - {limit.param for limit in LIMITS}
    if unknown:
        raise TypeError(f"unknown limits: {', '.join(sorted(unknown))}")
    named = {limit.param: limits.get(limit.param) for limit in LIMITS}
    return _plan(points, target_rps, named, require_quality)[1]
