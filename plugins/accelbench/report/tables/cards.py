"""The answer cards, the page's first screen: per model and workload, the cheapest configuration measured on
its instance type that meets every SLO, its cost with its interval, the runner-up and how much more it costs
(with the interval of that difference), and what changed since the previous report of the same filter.

The runner-up's extra cost: its price ratio to the cheapest's times the inverse ratio of their output
throughputs, the throughputs' ratio from a pooled two-sample t test on the logs of each side's repeats
(`accelbench.core.changes.repeats_change`, the regression gate's test): a ratio of geometric means with its
95% interval. An interval that holds 0 says the two are not told apart by these repeats.

What changed: the previous report of the same filter (its `cards` file) against this one. "new cheapest":
another configuration is the answer; "cost up"/"cost down": the same configuration's cost per 1M tokens
moved and the two reports' 95% intervals do not overlap (a conservative reading: overlapping intervals
are not called a change); "price change": its hourly price moved; "newly undecided": a level that could
change the answer is undecided where none was; "no answer": nothing meets the SLOs any more; "first
answer": something meets them where nothing did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from accelbench.core.changes import repeats_change
from accelbench.core.intervals import CONFIDENCE, Interval
from accelbench.report.labels import short_model
from accelbench.report.model import NO_INTERVAL, Point
from accelbench.report.pricing import cost_order
from accelbench.report.records import Record, figure
from accelbench.report.table import Inputs, Section, Table
from accelbench.report.tables.headline import answer_groups, undecided_levels

# The change kinds a card can carry, in the order a notification lists them; the first four change its answer.
ANSWER_CHANGES = ("new cheapest", "no answer", "first answer", "newly undecided")
COST_CHANGES = ("cost up", "cost down", "price change")


@dataclass(frozen=True, slots=True)
class Card:
    """One answer card (`cards`): per model and workload, measured on the instance type or on a local host."""

    model: str
    model_short: str
    workload: str
    on_instance: bool
    answer: str
    configurations_measured: int
    configurations_meeting_slos: int
    configuration: str | None = None
    level: str | None = None
    measured_where: str | None = None
    request_throughput: Interval = NO_INTERVAL
    on_demand_usd_per_hour: float | None = None
    on_demand_usd_per_1m_output_tokens: Interval = NO_INTERVAL
    spot_usd_per_1m_output_tokens: Interval = NO_INTERVAL
    p99_ttft_ms: Interval = NO_INTERVAL
    p99_tpot_ms: Interval = NO_INTERVAL
    runner_up: str | None = None
    runner_up_level: str | None = None
    runner_up_usd_per_1m_output_tokens: Interval = NO_INTERVAL
    # How much more the runner-up costs per 1M output tokens, relative (0.25: 25% more), with its interval.
    runner_up_cost_change: Interval = NO_INTERVAL
    runner_up_told_apart: bool | None = None  # False: the interval of the difference holds 0
    undecided: str | None = None
    previous_report_id: str | None = None
    previous_configuration: str | None = None
    previous_usd_per_1m_output_tokens: Interval = NO_INTERVAL
    changes: tuple[str, ...] = field(default=())
    change_text: str | None = None


def _repeats(p: Point, runs: Mapping[str, Record]) -> list[float]:
    return [v for r in p.run_ids if (v := runs.get(r, {}).get("output_throughput")) is not None]


def extra_cost(top: Point, other: Point, runs: Mapping[str, Record]) -> Interval:
    """How much more `other` costs per 1M output tokens than `top`, relative, with its 95% interval (the
    module docstring says how); NO_INTERVAL without prices or repeats."""
    p_top, p_other = top.on_demand.usd_per_hour, other.on_demand.usd_per_hour
    if not p_top or not p_other:
        return NO_INTERVAL
    change = repeats_change(_repeats(top, runs), _repeats(other, runs), worse_when=-1)
    if change.estimate is None:
        return NO_INTERVAL
    prices = p_other / p_top

    def extra(throughput_change: float | None) -> float | None:
        return None if throughput_change is None else prices / (1 + throughput_change) - 1

    method = f"ratio of geometric means, {change.method}"
    return Interval(extra(change.estimate), extra(change.high), extra(change.low), CONFIDENCE, method)


def _cost(row: Record | Card) -> Interval:
    if isinstance(row, Card):
        return row.on_demand_usd_per_1m_output_tokens
    return figure(row, "on_demand_usd_per_1m_output_tokens")


def _apart(a: Interval, b: Interval) -> int:
    """+1: `b` is above `a` with no overlap of their intervals; -1: below; 0: not told apart."""
    if None in (a.low, a.high, b.low, b.high):
        return 0
    if b.low > a.high:  # type: ignore[operator]
        return 1
    return -1 if b.high < a.low else 0  # type: ignore[operator]


def _money(value: Interval) -> str:
    if value.estimate is None:
        return "not priced"
    shown = f"{value.estimate:.4g} USD"
    if value.low is not None and value.high is not None:
        shown += f" [{value.low:.3g}, {value.high:.3g}]"
    return shown


def changes(card: Card, before: Record | None) -> tuple[tuple[str, ...], str | None]:
    """What changed in `card` since `before` (the previous report's card of the same model and workload;
    None: that report had none), and the words a notification carries."""
    if before is None:
        return (), None
    kinds: list[str] = []
    was, now = before.get("configuration"), card.configuration
    if was and now and was != now:
        kinds.append("new cheapest")
    elif was and not now:
        kinds.append("no answer")
    elif now and not was:
        kinds.append("first answer")
    if card.undecided and not before.get("undecided"):
        kinds.append("newly undecided")
    if was and was == now:
        moved = _apart(_cost(before), _cost(card))
        kinds += ["cost up"] if moved > 0 else ["cost down"] if moved < 0 else []
        old_price, price = before.get("on_demand_usd_per_hour"), card.on_demand_usd_per_hour
        if old_price and price and not math.isclose(old_price, price):
            kinds.append(f"price change ({old_price:g} -> {price:g} USD/h)")
    if not kinds:
        return (), None
    text = (
        f"{card.model_short}, {card.workload}: {', '.join(kinds)}. Now: {now or card.answer}"
        f"{' at ' + _money(card.on_demand_usd_per_1m_output_tokens) + ' per 1M output tokens' if now else ''}"
        f"; was: {was or before.get('answer')}"
        f"{' at ' + _money(_cost(before)) + ' per 1M output tokens' if was else ''}"
        f" (report {before.get('report_id') or before.get('previous_report_id') or 'before'})."
    )
    return tuple(kinds), text


def _key(model: str, workload: str, on_instance: bool) -> tuple[str, str, bool]:
    return (model, workload, on_instance)


def cards(inputs: Inputs) -> list[Card]:
    """The cards, one per answer the headline gives (`headline.answer_groups`), each compared with
    `inputs.previous`, the previous report's cards."""
    before = {_key(r["model"], r["workload"], bool(r["on_instance"])): r for r in inputs.previous}
    runs = {r["run_id"]: r for r in inputs.runs if r.get("run_id")}
    found = []
    for group in answer_groups(inputs.points, inputs.best):
        answer, top = group.answer()
        card = Card(
            model=group.model,
            model_short=short_model(group.model),
            workload=group.workload,
            on_instance=group.on_instance,
            answer=answer,
            configurations_measured=group.configurations,
            configurations_meeting_slos=len(group.candidates),
            undecided=undecided_levels(group.levels, top, group.on_instance),
        )
        card = _runner_up(_top(card, top), top, group.candidates, runs)
        found.append(_compared(card, before.get(_key(group.model, group.workload, group.on_instance))))
    return found


def _top(card: Card, top: Point | None) -> Card:
    """The card with its answer's figures."""
    if top is None:
        return card
    return replace(
        card,
        configuration=top.configuration,
        level=top.level,
        measured_where=top.measured_where,
        request_throughput=top.request_throughput,
        on_demand_usd_per_hour=top.on_demand.usd_per_hour,
        on_demand_usd_per_1m_output_tokens=top.on_demand.usd_per_1m_output_tokens,
        spot_usd_per_1m_output_tokens=top.spot.usd_per_1m_output_tokens,
        p99_ttft_ms=top.p99_ttft_ms,
        p99_tpot_ms=top.p99_tpot_ms,
    )


def _runner_up(
    card: Card, top: Point | None, candidates: Sequence[Point], runs: Mapping[str, Record]
) -> Card:
    """The card with the next cheapest configuration under the SLOs and how much more it costs."""
    priced = sorted(
        (p for p in candidates if p is not top and p.on_demand.usd_per_1m_output_tokens.estimate is not None),
        key=cost_order,
    )
    if top is None or not card.on_instance or not priced:
        return card
    second = priced[0]
    extra = extra_cost(top, second, runs)
    told_apart = None if extra.low is None or extra.high is None else not (extra.low <= 0 <= extra.high)
    return replace(
        card,
        runner_up=second.configuration,
        runner_up_level=second.level,
        runner_up_usd_per_1m_output_tokens=second.on_demand.usd_per_1m_output_tokens,
        runner_up_cost_change=extra,
        runner_up_told_apart=told_apart,
    )


def _compared(card: Card, before: Record | None) -> Card:
    """The card with what changed since the previous report's card of its model and workload."""
    kinds, text = changes(card, before)
    if before is None:
        return card
    return replace(
        card,
        previous_report_id=before.get("report_id"),
        previous_configuration=before.get("configuration"),
        previous_usd_per_1m_output_tokens=_cost(before),
        changes=kinds,
        change_text=text,
    )


def _rows(inputs: Inputs) -> list[Card]:
    return cards(inputs)


# A card's HTML: the answer, its cost with its interval, the runner-up, what changed, what is undecided.
_CARDS = """\
{% if rows and not rows | selectattr("on_demand_usd_per_1m_output_tokens") | list %}
<p class="lead">Not priced: measured on this host, not on the instance types named. For prices, run the
campaign with <code>execution_mode: kubernetes</code> on EKS.</p>
{% endif %}
<div class="cards">
{% for c in rows %}
<article class="card{{ '' if c.on_instance else ' local' }}{{ ' changed' if c.changes else '' }}"
 data-model="{{ c.model }}" data-workload="{{ c.workload }}">
<header><strong title="{{ c.model }}">{{ c.model_short }}</strong> · {{ c.workload }}
{%- if not c.on_instance %} <span class="tag">local host</span>{% endif %}</header>
{% if c.configuration %}
<div class="config">{{ c.configuration }}</div>
<div class="sub">at {{ c.level }} · {{ c.measured_where }}</div>
{% if c.on_demand_usd_per_1m_output_tokens is not none %}
<div class="figure">{{ c.on_demand_usd_per_1m_output_tokens | cell }} USD
<span class="unit">per 1M output tokens, on-demand</span>
{%- if c | bounds("on_demand_usd_per_1m_output_tokens") %}
<span class="ci">[{{ c | bounds("on_demand_usd_per_1m_output_tokens") }}]</span>{% endif %}</div>
{% else %}
<div class="figure">{{ c.request_throughput | cell }} <span class="unit">requests/s per replica</span>
{%- if c | bounds("request_throughput") %} <span class="ci">[{{ c | bounds("request_throughput") }}]</span>
{%- endif %}</div>
<div class="sub">not priced: measured on a local host, not on the instance type</div>
{% endif %}
{% if c.runner_up %}
<div class="runner">Runner-up: {{ c.runner_up }},
{% if c.runner_up_cost_change is not none %}{{ c.runner_up_cost_change | cell("runner_up_cost_change") }}
{%- set ci = c | bounds("runner_up_cost_change") %}{% if ci %} <span class="ci">[{{ ci }}]</span>{% endif %}
 more{% if c.runner_up_told_apart == false %} (not told apart){% endif %}
{%- else %}{{ c.runner_up_usd_per_1m_output_tokens | cell }} USD{% endif %}</div>
{% endif %}
{% else %}
<div class="config none">{{ c.answer }}</div>
<div class="sub">{{ c.configurations_measured }} configuration(s) measured</div>
{% endif %}
{% if c.changes %}<div class="change">Changed: {{ c.changes | join(", ") }}
{%- if c.previous_configuration and c.previous_configuration != c.configuration %}
(was {{ c.previous_configuration }}){% endif %}</div>{% endif %}
{% if c.undecided %}<details class="undecided"><summary>Undecided levels could change this</summary>
{{ c.undecided }}</details>{% endif %}
</article>
{% endfor %}
</div>"""

TABLE = Table(
    name="cards",
    row=Card,
    compute=_rows,
    columns=(
        "model_short",
        "workload",
        "answer",
        "configuration",
        "on_demand_usd_per_1m_output_tokens",
        "runner_up",
        "runner_up_cost_change",
        "changes",
    ),
    section=Section(
        heading="The answer",
        anchor="cards",
        table_id="cards-table",
        scroll=False,
        body=_CARDS,
        lead="""\
Cheapest configuration per model and workload meeting every SLO
({% for name, limit, unit in slos.shown() %}{{ name }} ≤ {{ limit }}{{ unit }}
{{- ", " if not loop.last }}{% endfor %});
brackets: 95% intervals.""",
        text="""\
<p>Per model and workload, among the configurations measured on their instance type whose best level
meets every SLO with its whole 95% interval (a limit left empty is not applied) and that pass the quality
gate, the one with the lowest on-demand cost per 1M output tokens; a local host's card names its fastest
level, unpriced. The runner-up is the next cheapest; how much more it costs is its price ratio times the
inverse ratio of the two output throughputs (a ratio of the repeats' geometric means, with the interval of
a pooled two-sample t test on their logs, the regression gate's test): "not told apart" when that interval
holds 0. "Changed" compares with the previous report of the same filter: a new cheapest configuration, no
answer or a first one, newly undecided levels, the same answer's cost moved beyond both reports' intervals
(cost up or down), or its hourly price changed.</p>""",
    ),
)
