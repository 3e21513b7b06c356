"""The cross-tier comparison: like with like only; and the best levels it sets apart, with why.

Each configuration's best level under the SLOs stands beside the other tiers' best levels of the same
model on the same workload (keys.COMPARISON_KEY: profile, endpoint, shared prefix, dataset, lengths and
their range), measured or imported, never beside another workload's. A group that more than one tier
measured is compared, cheapest first (the `cross_tier` table); a point whose group only one tier
measured is set apart with why (the `not_compared` table): another tier measured the model on a
different workload (and what differs), the other tiers' levels on this workload miss the SLOs, or no
other tier measured the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any

from accelbench.report.columns import COSTS, LATENCIES
from accelbench.report.keys import WORKLOAD_KEY
from accelbench.report.model import INLINE, Point
from accelbench.report.pricing import cost_order
from accelbench.report.records import Record
from accelbench.report.slos import BestPoint
from accelbench.report.table import Inputs, Section, Table

DIFFERENT_WORKLOAD = "different workload"
OTHERS_MISS_SLOS = "the other tiers' levels on this workload miss the SLOs"
NO_OTHER_TIER = "no other tier measured this model"
# A point's workload fields (WORKLOAD_KEY) as its configuration has them (the workload's name is
# `workload_profile` there; a point's `workload` is the workload in words).
_WORKLOAD_FIELDS = tuple(("workload_profile" if k == "workload" else k, k) for k in WORKLOAD_KEY)


@dataclass(frozen=True, slots=True)
class Compared:
    """A best level in a group that more than one tier measured, with the tiers compared."""

    best: BestPoint = field(metadata=INLINE)
    tiers_compared: str


@dataclass(frozen=True, slots=True)
class Apart:
    """A best level no other tier stands beside, with why (`not_compared_because`) and, for a different
    workload, how the other tiers' workloads of the model differ (`workload_differs`)."""

    best: BestPoint = field(metadata=INLINE)
    not_compared_because: str
    workload_differs: str | None


def _shown(value: Any) -> str:
    if value is None:
        return "not recorded"
    return f"{value:g}" if isinstance(value, float) else str(value)


def workload_differences(p: Point, q: Point) -> str:
    """ "input_len 1024 vs 64, output_len 128 vs 32": the workload fields in which point p differs from q."""
    return ", ".join(
        f"{name} {_shown(getattr(p.config, attr))} vs {_shown(getattr(q.config, attr))}"
        for attr, name in _WORKLOAD_FIELDS
        if getattr(p.config, attr) != getattr(q.config, attr)
    )


def _why_apart(b: BestPoint, points: Sequence[Point]) -> Apart:
    """Why best level `b` has no other tier beside it."""
    p = b.point
    others = [q for q in points if q.model == p.model and q.accelerator_type != p.accelerator_type]
    if not others:
        return Apart(b, NO_OTHER_TIER, None)
    if any(q.comparison_id == p.comparison_id for q in others):
        return Apart(b, OTHERS_MISS_SLOS, None)
    workloads: dict[str, Point] = {}
    for q in sorted(others, key=lambda q: (q.accelerator_type or "", q.workload)):
        workloads.setdefault(f"{q.accelerator_type} {q.comparison_id}", q)
    differs = "; ".join(
        f"{q.accelerator_type} {q.workload}: {workload_differences(p, q)}" for q in workloads.values()
    )
    return Apart(b, DIFFERENT_WORKLOAD, differs)


def _groups(best: Sequence[BestPoint]) -> list[tuple[list[str], list[BestPoint]]]:
    """(tiers, members) per model and workload, in order of first appearance in `best`."""
    groups: dict[str, list[BestPoint]] = defaultdict(list)
    for b in best:
        groups[b.point.comparison_id].append(b)
    return [
        (sorted({str(b.point.accelerator_type) for b in members}), members) for members in groups.values()
    ]


def _group(b: BestPoint) -> tuple[str, str]:
    return (b.point.comparison, b.point.comparison_id)


def compared(best: Sequence[BestPoint]) -> list[Compared]:
    """The best levels of the groups more than one tier measured, with `tiers_compared`, by comparison
    group, cheapest first within it; a local host's rows stay unpriced and last, labelled with that host."""
    rows = []
    for tiers, members in _groups(best):
        if len(tiers) > 1:
            ordered = sorted(members, key=lambda b: cost_order(b.point))
            rows += [Compared(b, ", ".join(tiers)) for b in ordered]
    return sorted(rows, key=lambda r: _group(r.best))  # stable: the rows keep their cost order in a group


def not_compared(best: Sequence[BestPoint], points: Sequence[Point]) -> list[Apart]:
    """The best levels of the groups one tier measured, each with why (`points`: every point, to say it)."""
    apart = []
    for tiers, members in _groups(best):
        if len(tiers) == 1:
            apart += [_why_apart(b, points) for b in members]
    return sorted(apart, key=lambda a: (*_group(a.best), cost_order(a.best.point)))


def cross_tier(best: Sequence[BestPoint], points: Sequence[Point]) -> tuple[list[Compared], list[Apart]]:
    """(compared, not compared) from the best levels under the SLOs (`best`) and every point (`points`)."""
    return compared(best), not_compared(best, points)


def comparison_groups(rows: Sequence[Record]) -> Mapping[str, Any]:
    """The section's `groups`: the compared rows by comparison group, one HTML table each."""
    groups = []
    for cid, members in groupby(rows, itemgetter("comparison_id")):
        group = list(members)
        first = group[0]
        groups.append(
            {"id": cid, "label": first["comparison"], "tiers": first["tiers_compared"], "rows": group}
        )
    return {"groups": groups}


def _compared(inputs: Inputs) -> list[Compared]:
    return compared(inputs.best)


def _not_compared(inputs: Inputs) -> list[Apart]:
    return not_compared(inputs.best, inputs.points)


TABLE = Table(
    name="cross_tier",
    row=Compared,
    compute=_compared,
    columns=(
        "accelerator_type",
        "instance_type",
        "measured_where",
        "vllm_version",
        "tensor_parallel_size",
        "ran",
        "configuration",
        "level",
        "output_throughput",
        "output_throughput_per_accelerator",
        "request_throughput",
        *COSTS,
        *LATENCIES,
        "error_rate",
        "repeats_campaigns",
    ),
    section=Section(
        unmeasured="two tiers' `instance_types`",
        heading="Cross-tier comparison: the same model on the same workload",
        anchor="cross-tier",
        table_id="cross-tier",  # one table per group: cross-tier-<comparison id>
        variables=comparison_groups,
        text="""\
<p>Per model and workload (the profile, its endpoint, shared prefix, dataset, input and output lengths and
their range: all must be the same), each configuration's best level under the SLOs beside the other tiers',
cheapest first, with its cost per 1M tokens, throughput per accelerator (blank on CPU) and where it was
measured: by this suite on the instance type (kubernetes), on a local host (named, never priced), or
imported from a result file, on the instance type its importer stated. A point of another workload is never
in the same group: those that no other tier measured on their workload are listed below with why.
{{ intervals_short }}</p>""",
        body="""\
{% for group in groups %}
<h3 id="{{ section.table_id }}-{{ group.id }}-heading">{{ group.label }}
<span class="empty">({{ group.tiers }})</span></h3>
{{ table(section.table_id ~ "-" ~ group.id, group.rows, columns) }}
{% else %}<p class="empty"
id="{{ section.table_id }}-empty">No model and workload was measured on more than one tier.</p>
{% endfor %}""",
    ),
)

NOT_COMPARED = Table(
    name="not_compared",
    row=Apart,
    compute=_not_compared,
    columns=(
        "model_short",
        "workload",
        "accelerator_type",
        "measured_where",
        "configuration",
        "level",
        "not_compared_because",
        "workload_differs",
        "output_throughput",
        "on_demand_usd_per_1m_output_tokens",
    ),
    section=Section(
        heading="Not compared",
        anchor="not-compared",
        level=3,
        table_id="not-compared-table",
        text="""\
<p>Best levels with no other tier beside them: another tier measured the model on a different workload
(what differs is listed, this point's value first), the other tiers' levels on this workload miss the SLOs,
or no other tier measured the model. {{ intervals_short }}</p>""",
    ),
)
