"""Headroom for the user's own traffic: per configuration whose load search varied a trace's time-scale,
how many times the recorded traffic it holds under the SLOs (the search's capacity, with its 95% interval),
and what serving that traffic takes: replicas = ceil(1 / headroom) (a configuration that holds under 1x needs
more than one), and their monthly cost = replicas x USD per hour x HOURS_PER_MONTH, on-demand and spot; the
replicas at the interval's low end beside them, what a cautious buyer plans for. Per tier, cheapest first
(unpriced last: a configuration measured off its instance type has no price that applies)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.core.intervals import CONFIDENCE, Interval
from accelbench.report.capacity_planner import HOURS_PER_MONTH
from accelbench.report.records import records
from accelbench.report.table import Section, Table

COLUMNS = (
    "trace",
    "accelerator_type",
    "instance_type",
    "model_short",
    "headroom",
    "bracket",
    "limiting_metric",
    "replicas",
    "replicas_at_low",
    "on_demand_usd_per_month",
    "spot_usd_per_month",
    "host",
)


def replicas_for(headroom: float | None, traffic: float = 1.0) -> int | None:
    """Replicas of a configuration that holds `headroom` times the trace to serve `traffic` times it."""
    if headroom is None or headroom <= 0:
        return None
    return max(1, math.ceil(traffic / headroom - 1e-9))


def monthly(replicas: int | None, usd_per_hour: float | None) -> float | None:
    if replicas is None or usd_per_hour is None:
        return None
    return replicas * usd_per_hour * HOURS_PER_MONTH


@dataclass(frozen=True, slots=True)
class Headroom:
    """A headroom search's configuration planned for some traffic: the times the trace it holds under the
    SLOs (its capacity, with its interval), the replicas the traffic takes and what they cost a month."""

    trace: str | None
    trace_sha256: str | None
    accelerator_type: str | None
    instance_type: str | None
    model_short: str | None
    bracket: str | None
    limiting_metric: str | None
    host: str | None
    spec_id: str | None
    headroom: Interval
    traffic: float
    replicas: int | None
    replicas_at_low: int | None
    on_demand_usd_per_hour: float | None
    spot_usd_per_hour: float | None
    on_demand_usd_per_month: float | None
    spot_usd_per_month: float | None


def headroom_rows(capacities: Iterable[Mapping[str, Any]], traffic: float = 1.0) -> list[Headroom]:
    """The headroom searches' rows (capacity rows of `search_variable` time_scale, as the capacities table's
    files hold them) planned for `traffic` times the recorded trace; per tier, cheapest on-demand first,
    unpriced last."""
    out = []
    for c in capacities:
        if c.get("search_variable") != "time_scale" or c.get("capacity") is None:
            continue
        replicas = replicas_for(c["capacity"], traffic)
        out.append(
            Headroom(
                trace=c.get("trace"),
                trace_sha256=c.get("trace_sha256"),
                accelerator_type=c.get("accelerator_type"),
                instance_type=c.get("instance_type"),
                model_short=c.get("model_short"),
                bracket=c.get("bracket"),
                limiting_metric=c.get("limiting_metric"),
                host=c.get("host"),
                spec_id=c.get("spec_id"),
                headroom=Interval(
                    c["capacity"], c.get("capacity_low"), c.get("capacity_high"), CONFIDENCE, ""
                ),
                traffic=traffic,
                replicas=replicas,
                replicas_at_low=replicas_for(c.get("capacity_low"), traffic),
                on_demand_usd_per_hour=c.get("on_demand_usd_per_hour"),
                spot_usd_per_hour=c.get("spot_usd_per_hour"),
                on_demand_usd_per_month=monthly(replicas, c.get("on_demand_usd_per_hour")),
                spot_usd_per_month=monthly(replicas, c.get("spot_usd_per_hour")),
            )
        )

    def order(r: Headroom) -> tuple[Any, ...]:
        cost = r.on_demand_usd_per_month
        return (r.trace or "", r.accelerator_type or "", cost is None, cost or 0.0, r.instance_type or "")

    return sorted(out, key=order)


TABLE = Table(
    name="trace_headroom",
    row=Headroom,
    compute=lambda inputs: headroom_rows(records(inputs.capacities)),
    columns=COLUMNS,
    listed_as="Trace headroom",
    section=Section(
        unmeasured="`trace` with `load_mode: search`",
        heading="Headroom for your traffic",
        anchor="trace-headroom",
        table_id="trace-headroom-table",
        level=3,
        text="<p>Each configuration whose load search replayed a timed trace faster and faster: how many "
        "times the recorded traffic it holds under the search's SLOs (its capacity, the largest time-scale "
        "whose every repeat held them, with the bracket and the 95% interval of the monotone fit), and what "
        "serving the traffic as recorded takes: replicas = ceil(1 / headroom), and their monthly cost = "
        f"replicas x USD per hour x {HOURS_PER_MONTH} h; the replicas at the interval's low end beside them. "
        "Per tier, cheapest first; unpriced where measured off the instance type.</p>",
    ),
)
