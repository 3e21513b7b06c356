"""The answer, first on the page: per model and workload, the cheapest configuration measured on its
instance type that meets every SLO (its intervals within them); where none does, it says so; local results
get their own line; and the undecided levels that could change the answer, with what would decide them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from accelbench.quality.quality_gate import GATE_ACCURACY_RATIO, GATE_MEAN_KL
from accelbench.report.columns import COSTS, LATENCIES
from accelbench.report.labels import short_model
from accelbench.report.model import INLINE, NO_INTERVAL, Interval, Point
from accelbench.report.pricing import cost_order
from accelbench.report.slos import BestPoint
from accelbench.report.table import Inputs, Section, Table

MAX_UNDECIDED_SHOWN = 3  # the headline names this many undecided levels, then counts the rest


@dataclass(frozen=True, slots=True)
class Answer:
    """The answer for one model and workload: the point it names (`top`, None when none does) and the
    figures it is named by, with their intervals."""

    configuration: str | None = None
    level: str | None = None
    host: str | None = None
    measured_where: str | None = None
    measured_on_instance: bool | None = None
    accelerator_type: str | None = None
    instance_type: str | None = None
    vllm_version: str | None = None
    level_kind: str | None = None
    level_value: float | None = None
    request_throughput: Interval = NO_INTERVAL
    output_throughput: float | None = None
    request_goodput: float | None = None
    on_demand_usd_per_1m_output_tokens: Interval = NO_INTERVAL
    on_demand_usd_per_1m_total_tokens: Interval = NO_INTERVAL
    spot_usd_per_1m_output_tokens: Interval = NO_INTERVAL
    spot_usd_per_1m_total_tokens: Interval = NO_INTERVAL
    p99_ttft_ms: Interval = NO_INTERVAL
    p99_tpot_ms: Interval = NO_INTERVAL
    p99_e2el_ms: Interval = NO_INTERVAL
    error_rate: Interval = NO_INTERVAL
    repeats: int | None = None
    campaigns: int | None = None
    sample_warning: str | None = None

    @classmethod
    def of(cls, p: Point | None) -> Answer:
        if p is None:
            return cls()
        return cls(
            configuration=p.configuration,
            level=p.level,
            host=p.host,
            measured_where=p.measured_where,
            measured_on_instance=p.measured_on_instance,
            accelerator_type=p.accelerator_type,
            instance_type=p.instance_type,
            vllm_version=p.vllm_version,
            level_kind=p.level_kind,
            level_value=p.level_value,
            request_throughput=p.request_throughput,
            output_throughput=p.output_throughput.estimate,
            request_goodput=p.request_goodput.estimate,
            on_demand_usd_per_1m_output_tokens=p.on_demand.usd_per_1m_output_tokens,
            on_demand_usd_per_1m_total_tokens=p.on_demand.usd_per_1m_total_tokens,
            spot_usd_per_1m_output_tokens=p.spot.usd_per_1m_output_tokens,
            spot_usd_per_1m_total_tokens=p.spot.usd_per_1m_total_tokens,
            p99_ttft_ms=p.p99_ttft_ms,
            p99_tpot_ms=p.p99_tpot_ms,
            p99_e2el_ms=p.p99_e2el_ms,
            error_rate=p.error_rate,
            repeats=p.repeats,
            campaigns=p.campaigns,
            sample_warning=p.sample_warning,
        )


@dataclass(frozen=True, slots=True)
class Headline:
    """One line of the answer (`headline`): per model and workload, measured on the instance or not."""

    model: str
    model_short: str
    workload: str
    configurations_measured: int
    configurations_meeting_slos: int
    answer: str
    undecided: str | None
    quality_skipped: str | None
    top: Answer = field(metadata=INLINE)


def family(p: Point) -> str:
    """The model a point answers for: a quantized checkpoint's reference model (accelbench.report.quality),
    else its own."""
    return str(p.quality.quality_reference or p.model)


def _quality_skipped(candidates: list[Point]) -> str | None:
    """The configurations left out of the answer by the quality gate, each with its verdict and why."""
    skipped = [p for p in candidates if p.quality.quality_gate not in (None, "pass")]
    said = [f"{p.configuration}: quality {p.quality.quality_gate} ({p.quality.quality_why})" for p in skipped]
    return " | ".join(said) or None


def _cost(p: Point) -> float | None:
    return p.on_demand.usd_per_1m_output_tokens.estimate


def answer_for(on_instance: bool, candidates: list[Point]) -> tuple[str, Point | None]:
    """(the answer in words, the point it names) among the best levels of one model and workload that pass
    the quality gate (a configuration outside a quantization matrix has none to pass)."""
    candidates = [p for p in candidates if p.quality.quality_gate in (None, "pass")]
    priced = [p for p in candidates if _cost(p) is not None]
    fastest = max(candidates, key=lambda p: p.output_throughput.estimate or 0) if candidates else None
    if on_instance and priced:
        return "cheapest under the SLOs", min(priced, key=cost_order)
    if on_instance:
        return ("meets the SLOs, not priced" if fastest else "no configuration meets the SLOs"), fastest
    if fastest:
        return "local host only: not an instance measurement, not priced", fastest
    return "local host only: nothing meets the SLOs", None


def _could_change(p: Point, top: Point | None, on_instance: bool) -> bool:
    """Whether undecided level `p`, were it to meet the SLOs, could be the answer instead of `top`: cheaper
    (on the instance; unpriced counts), or faster (a local host's answer is its fastest level)."""
    if top is None:
        return True
    if on_instance:
        mine, theirs = _cost(p), _cost(top)
        return mine is None or theirs is None or mine < theirs
    return (p.output_throughput.estimate or 0) > (top.output_throughput.estimate or 0)


def undecided_levels(points: Sequence[Point], top: Point | None, on_instance: bool) -> str | None:
    """The undecided levels (`slo_verdict`, `accelbench.report.slos.slo_judgement`) that could change the
    answer, each with what would decide it; the first MAX_UNDECIDED_SHOWN by throughput, then how many
    more."""
    found = sorted(
        (p for p in points if p.slo_verdict == "undecided" and _could_change(p, top, on_instance)),
        key=lambda p: -(p.output_throughput.estimate or 0),
    )
    if not found:
        return None
    named = [f"{p.configuration} at {p.level}: {p.slo_why}" for p in found[:MAX_UNDECIDED_SHOWN]]
    more = len(found) - MAX_UNDECIDED_SHOWN
    return " | ".join(named) + (f" | and {more} more (all points table)" if more > 0 else "")


@dataclass(frozen=True, slots=True)
class AnswerGroup:
    """What one answer is chosen from: one model and workload (one comparison, keys.COMPARISON_KEY, its
    quantizations in it), measured on the instance type or not; its levels and, of them, each
    configuration's best level under the SLOs (`candidates`). The headline and the cards read the same."""

    model: str
    workload: str
    on_instance: bool
    configurations: int
    levels: list[Point]
    candidates: list[Point]

    def answer(self) -> tuple[str, Point | None]:
        return answer_for(self.on_instance, self.candidates)


def answer_groups(points: Sequence[Point], best: Sequence[BestPoint]) -> list[AnswerGroup]:
    """The points by model and workload, on the instance first."""
    measured: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    levels: dict[tuple[Any, ...], list[Point]] = defaultdict(list)
    for p in points:
        key = (family(p), p.workload, p.comparison_id, p.measured_on_instance)
        measured[key].add(p.configuration_id)
        levels[key].append(p)
    chosen: dict[tuple[Any, ...], list[Point]] = defaultdict(list)
    for b in best:
        p = b.point
        chosen[(family(p), p.workload, p.comparison_id, p.measured_on_instance)].append(p)
    return [
        AnswerGroup(key[0], key[1], key[3], len(measured[key]), levels[key], chosen.get(key, []))
        for key in sorted(measured, key=lambda k: (str(k[0]), k[1], k[2], not k[3]))
    ]


def headline(points: Sequence[Point], best: Sequence[BestPoint]) -> list[Headline]:
    """The answer, per model and workload: the cheapest configuration measured on its instance type
    that meets every SLO; where none does, say so; local results get their own, unpriced, line."""
    rows = []
    for group in answer_groups(points, best):
        answer, top = group.answer()
        rows.append(
            Headline(
                model=group.model,
                model_short=short_model(group.model),
                workload=group.workload,
                configurations_measured=group.configurations,
                configurations_meeting_slos=len(group.candidates),
                answer=answer,
                undecided=undecided_levels(group.levels, top, group.on_instance),
                quality_skipped=_quality_skipped(group.candidates),
                top=Answer.of(top),
            )
        )
    return rows


def _rows(inputs: Inputs) -> list[Headline]:
    return headline(inputs.points, inputs.best)


TABLE = Table(
    name="headline",
    row=Headline,
    compute=_rows,
    columns=(
        "model_short",
        "workload",
        "answer",
        "configuration",
        "level",
        "request_throughput",
        *COSTS,
        *LATENCIES,
        "error_rate",
        "measured_where",
    ),
    section=Section(
        heading="The answers as a table",
        anchor="answer",
        table_id="headline-table",
        scroll=False,
        variables=lambda rows: {"gate": {"min_ratio": GATE_ACCURACY_RATIO, "max_kl": GATE_MEAN_KL}},
        text="""\
<p>Per model and workload, the configuration measured on its instance type with the lowest on-demand cost
per 1M output tokens whose level meets every SLO: p99 TTFT{% if slos.ttft_p99_ms %}
≤ {{ slos.ttft_p99_ms | cell }} ms{% endif %}, p99 TPOT{% if slos.tpot_p99_ms %}
≤ {{ slos.tpot_p99_ms | cell }} ms{% endif %}, p99 E2E latency{% if slos.e2el_p99_ms %}
≤ {{ slos.e2el_p99_ms | cell }} ms{% endif %}{% if slos.max_error_rate is not none %},
error rate ≤ {{ slos.max_error_rate | cell("error_rate") }}{% endif %}
(a limit left empty is not applied). "Requests per s" is what one replica sustains at that level.
{{ intervals }}</p>
{% for h in rows %}
<p class="answer{{ ' local' if h.host and h.host != 'instance' else '' }}">
{{- '' }}<strong title="{{ h.model }}">{{ h.model_short }}</strong>, {{ h.workload }}:
{% if h.configuration %}{{ h.answer }}: <strong>{{ h.configuration }}</strong> at {{ h.level }},
{{ h.request_throughput | cell }}{% if h | bounds("request_throughput") %}
[{{ h | bounds("request_throughput") }}]{% endif %} requests/s per replica
{%- if h.on_demand_usd_per_1m_output_tokens is not none %},
{{ h.on_demand_usd_per_1m_output_tokens | cell }}{% if h | bounds("on_demand_usd_per_1m_output_tokens") %}
[{{ h | bounds("on_demand_usd_per_1m_output_tokens") }}]{% endif %} USD per 1M output tokens on-demand
{%- if h.spot_usd_per_1m_output_tokens is not none %}
({{ h.spot_usd_per_1m_output_tokens | cell }}{% if h | bounds("spot_usd_per_1m_output_tokens") %}
[{{ h | bounds("spot_usd_per_1m_output_tokens") }}]{% endif %} spot){% endif %}{% endif %}
({{ h.measured_where }}).
{% else %}{{ h.answer }} ({{ h.configurations_measured }} measured).{% endif %}
{%- if h.undecided %}<br><span class="undecided">Undecided, could change this answer: {{ h.undecided }}</span>
{%- endif %}
{%- if h.quality_skipped %}<br><span class="undecided">Left out by the quality gate (at least
{{ gate.min_ratio | cell("accuracy_ratio") }} of the reference's accuracy and a mean top-k KL of at most
{{ gate.max_kl }} nats, each decided by its 95% interval): {{ h.quality_skipped }}</span>
{%- endif %}</p>
{% endfor %}""",
    ),
)
