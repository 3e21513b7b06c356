"""Per configuration measured on its instance type, the highest-throughput level that meets every SLO (its
intervals within them; an undecided level never counts), cheapest first (`accelbench.report.slos.
best_under_slos` picks them for every table that needs them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.report.columns import COSTS, LATENCIES, RATES, SIZE, WHAT
from accelbench.report.records import Record
from accelbench.report.slos import BestPoint
from accelbench.report.table import Inputs, Section, Table


def _on_instance(inputs: Inputs) -> list[BestPoint]:
    return [b for b in inputs.best if b.point.measured_on_instance]


def price_sources(rows: Sequence[Record]) -> Mapping[str, Any]:
    """The section's `price_sources`: where the prices of its rows came from, each once."""
    found = {p[k] for p in rows for k in ("on_demand_price_source", "spot_price_source") if p.get(k)}
    return {"price_sources": sorted(found)}


TABLE = Table(
    name="best_under_slo",
    row=BestPoint,
    compute=_on_instance,
    # Every best point was measured on its instance type (imported: as stated); the headline, cross-tier
    # and points tables say where. The table must fit 1,328 px (the Benchmarks view's frame) without
    # scrolling.
    columns=(*WHAT, *RATES, *COSTS[:2], *LATENCIES, *SIZE, "sample_warning"),
    listed_as="Best points",
    section=Section(
        unmeasured="`execution_mode: kubernetes`",
        heading="Best level under the SLOs, measured on the instance",
        anchor="best",
        table_id="best-table",
        scroll=False,
        variables=price_sources,
        text="""\
<p>Per configuration measured on its instance type, the highest-throughput load level that meets every SLO,
cheapest first. Prices are the catalog's in force at the run's time
{%- if price_sources %} ({{ price_sources | join("; ") }}){% endif %}.
Repeats pool only within one configuration, workload and level, from any campaign: "Repeats / campaigns"
says how many repeats and how many campaigns they came from. The cost per 1M total tokens is in the
headline and in every point. {{ intervals_short }} A level counts only when its intervals are within
every SLO: a configuration whose higher levels are undecided is listed under the table with what would
decide them.</p>""",
        body="""\
{{ table(section.table_id, rows, columns, scroll=section.scroll) }}
{% set undecided = rows | selectattr("undecided_above") | list %}
{% if undecided %}<ul id="best-undecided">
{% for r in undecided %}<li class="undecided">{{ r.configuration }} · {{ r.model_short }} · {{ r.workload }}:
{{ r.undecided_above }}</li>
{% endfor %}</ul>{% endif %}""",
    ),
)
