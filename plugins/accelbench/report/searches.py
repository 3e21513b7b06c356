"""Load searches as the report reads them: each `capacities` row with its capacity priced from its own
probe there (`accelbench.report.model.Capacity`), and the labels of the points that are a search's capacity,
for the capacity planner."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from accelbench.core.price import Price
from accelbench.core.search_plan import LEVEL_KINDS, UNDECIDED_HIGH, UNITS, says_high_undecided
from accelbench.lake.schemas import LakeRow
from accelbench.report.hosts import host_label
from accelbench.report.labels import bracket_text, level_label, short_model, slos_text, trace_label
from accelbench.report.model import AtCapacity, Capacity, Point
from accelbench.report.points import level_points


def _search_of(row: LakeRow) -> tuple[Any, Any]:
    """One search: its spec in one ingest (a `capacities` row and its probes' `runs` rows share both)."""
    return (row.get("spec_id"), row.get("dag_run_id"))


def capacity_point(
    capacity: LakeRow, probes: Iterable[LakeRow], prices: Sequence[Price], region: str
) -> Point | None:
    """The report's point of the search's own probe at its capacity (the passing end of the bracket):
    medians over that probe's measured repeats, priced as any point is (at the newest repeat's time,
    only when measured on the instance). None without a capacity (client-limited, untrusted, below the
    lower bound) or without a measured repeat there (retracted, filtered out)."""
    load = capacity.get("capacity")
    if load is None:
        return None
    found = level_points((r for r in probes if r.get("level_value") == load), prices, region)
    return found[0] if len(found) == 1 else None  # one probe, one load: one point


def bracket_with_interval(capacity: LakeRow) -> str | None:
    """ "[26, 27]; 95%: [24, 28]": the bracket, and the capacity's interval from the monotone fit of every
    probe (`search.statistics.fit_capacity`; "-" for an open end) where the search had one (schema 8 on)."""
    bracket = bracket_text(capacity.get("bracket_passing"), capacity.get("bracket_failing"))
    if capacity.get("capacity_method") is None:
        return bracket
    ends = ["-" if capacity.get(k) is None else f"{capacity[k]:g}" for k in ("capacity_low", "capacity_high")]
    # An upper end no probe judged to miss (issue 48): the method says "upper end 4 undecided".
    undecided = says_high_undecided(capacity.get("capacity_method"), capacity.get("capacity_high"))
    text = f"{bracket or '[, ]'}; 95%: [{ends[0]}, {ends[1]}]"
    return text + (f", {ends[1]} {UNDECIDED_HIGH}" if undecided else "")


def outcome_text(capacity: LakeRow) -> str | None:
    """A search's outcome as the table says it: the outcome, and for a search that stopped early where
    and why ("probe_failed at 6 concurrent: the server died ...")."""
    outcome, at = capacity.get("outcome"), capacity.get("stopped_at")
    if outcome is None or at is None:
        return outcome
    unit = UNITS.get(capacity.get("variable") or "", "")
    why = capacity.get("stopped_why")
    return f"{outcome} at {at:g} {unit}".strip() + (f": {why}" if why else "")


def _at_capacity(p: Point | None) -> AtCapacity:
    if p is None:
        return AtCapacity()
    return AtCapacity(
        point_id=p.point_id,
        configuration_id=p.configuration_id,
        repeats=p.repeats,
        request_throughput=p.request_throughput.estimate,
        output_throughput=p.output_throughput.estimate,
        total_token_throughput=p.total_token_throughput.estimate,
        on_demand_usd_per_hour=p.on_demand.usd_per_hour,
        spot_usd_per_hour=p.spot.usd_per_hour,
        on_demand_price_source=p.on_demand.price_source,
        spot_price_source=p.spot.price_source,
        on_demand_usd_per_1m_output_tokens=p.on_demand.usd_per_1m_output_tokens.estimate,
        on_demand_usd_per_1m_total_tokens=p.on_demand.usd_per_1m_total_tokens.estimate,
        spot_usd_per_1m_output_tokens=p.spot.usd_per_1m_output_tokens.estimate,
        spot_usd_per_1m_total_tokens=p.spot.usd_per_1m_total_tokens.estimate,
    )


def capacity_rows(
    capacities: list[LakeRow],
    runs: Iterable[LakeRow],
    prices: Sequence[Price],
    region: str,
) -> list[Capacity]:
    """The load searches' `capacities` rows as the report shows them: the capacity under the SLOs, the
    bracket it lies in, what limited it and what the search cost, and at the capacity the request and
    token throughput and the cost per 1M tokens from the search's own probe rows in `runs`
    (`capacity_point`); largest capacity first per model."""
    probes: dict[tuple[Any, Any], list[LakeRow]] = defaultdict(list)
    for run in runs:
        if run.get("search_step") is not None:
            probes[_search_of(run)].append(run)
    rows = []
    for c in capacities:
        at = capacity_point(c, probes.get(_search_of(c), []), prices, region)
        rows.append(
            Capacity(
                model_short=short_model(c.get("model")),
                model=c.get("model"),
                instance_type=c.get("instance_type"),
                vllm_version=c.get("vllm_version"),
                search_variable=c.get("variable"),
                capacity=c.get("capacity"),
                bracket=bracket_with_interval(c),
                limiting_metric=c.get("limiting_metric"),
                search_slos=slos_text(c),
                search_outcome=outcome_text(c),
                search_precision=c.get("precision"),
                probes=c.get("probes"),
                server_s=c.get("server_s"),
                host=host_label(c),
                spec_id=c.get("spec_id"),
                accelerator_type=c.get("accelerator_type"),
                capacity_low=c.get("capacity_low"),
                capacity_high=c.get("capacity_high"),
                trace_sha256=c.get("trace_sha256"),
                trace=trace_label(c),
                at=_at_capacity(at),
            )
        )
    return sorted(rows, key=lambda r: (r.model_short, -(r.capacity or 0), r.instance_type or ""))


def searched_label(row: Capacity) -> str:
    """ "concurrency 5 [5, 6]": a capacities-table row's capacity as a load level, with its bracket."""
    kind = LEVEL_KINDS.get(row.search_variable or "", "rate")
    text = f"{level_label(kind, row.capacity or 0)} {row.bracket or ''}".strip()
    return f"{text} (upper bound passed)" if row.search_outcome == "upper_bound" else text


def searched_labels(capacities: Iterable[Capacity]) -> dict[str, list[str]]:
    """Point id -> the label of each search whose capacity is that point (`searched_label`): a point's
    `searched_capacity`, which the capacity planner prefers."""
    labels: dict[str, list[str]] = defaultdict(list)
    for c in capacities:
        if c.at.point_id and c.capacity is not None:
            text = searched_label(c)
            if text not in labels[c.at.point_id]:
                labels[c.at.point_id].append(text)
    return labels
