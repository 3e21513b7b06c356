"""Quality beside cost: per model and workload, each configuration of a quantization matrix with its cost per
1M output tokens (its best level under the SLOs) and its quality against the reference configuration (top-k
KL, top-1 agreement, accuracy and its share of the reference's), with the quality gate's verdict; the
configurations on the cost-quality Pareto front are marked (none cheaper at least as good)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from accelbench.quality.quality_gate import GATE_ACCURACY_RATIO, GATE_MEAN_KL
from accelbench.report.labels import short_model
from accelbench.report.model import INLINE, NO_INTERVAL, Interval, Point, QualityGrade
from accelbench.report.slos import BestPoint
from accelbench.report.table import Inputs, Section, Table

COST = "on_demand_usd_per_1m_output_tokens"


@dataclass(frozen=True, slots=True)
class QualityRow:
    """A configuration with a quality row: its cost per 1M output tokens at its best level under the SLOs
    (none: no level meets them), its quality against the reference and the gate, whether it is on the
    cost-quality Pareto front of its model and workload."""

    configuration: str
    configuration_id: str
    model: str | None
    workload: str
    instance_type: str | None
    quantization: str | None
    level: str | None
    measured_where: str
    on_demand_usd_per_1m_output_tokens: Interval
    output_throughput: float | None
    quality: QualityGrade = field(metadata=INLINE)
    model_short: str = ""  # the model it answers for: the reference's
    on_pareto_front: bool = False

    @property
    def cost(self) -> float | None:
        return self.on_demand_usd_per_1m_output_tokens.estimate

    @property
    def ratio(self) -> float | None:
        return self.quality.accuracy_ratio.estimate


def pareto(rows: Sequence[QualityRow]) -> set[str]:
    """The configuration ids on the front of (lower cost, higher accuracy ratio): none other is at most as
    costly and at least as accurate, and better in one. Rows without both figures are not on it."""
    known = [
        (r.configuration_id, r.cost, r.ratio) for r in rows if r.cost is not None and r.ratio is not None
    ]
    front = set()
    for cid, cost, ratio in known:
        beaten = any(
            other != cid and c <= cost and q >= ratio and (c < cost or q > ratio) for other, c, q in known
        )
        if not beaten:
            front.add(cid)
    return front


def _row(p: Point, best: BestPoint | None) -> QualityRow:
    at = best.point if best else None
    return QualityRow(
        configuration=p.configuration,
        configuration_id=p.configuration_id,
        model=p.model,
        workload=p.workload,
        instance_type=p.instance_type,
        quantization=p.config.quantization,
        level=at.level if at else None,
        measured_where=p.measured_where,
        on_demand_usd_per_1m_output_tokens=at.on_demand.usd_per_1m_output_tokens if at else NO_INTERVAL,
        output_throughput=at.output_throughput.estimate if at else None,
        quality=p.quality,
        model_short=short_model(p.quality.quality_reference or p.model),
    )


def quality_rows(inputs: Inputs) -> list[QualityRow]:
    """One row per configuration with a quality row: its best level under the SLOs (cost), else none."""
    best = {b.point.configuration_id: b for b in inputs.best}
    configs: dict[str, Point] = {}
    for p in inputs.points:
        if p.quality.quality_gate is not None:
            configs.setdefault(p.configuration_id, p)
    groups: dict[tuple[Any, Any], list[QualityRow]] = defaultdict(list)
    for cid, p in configs.items():
        row = _row(p, best.get(cid))
        groups[(row.quality.quality_reference, row.workload)].append(row)
    rows = []
    for group in groups.values():
        front = pareto(group)
        rows += [replace(r, on_pareto_front=r.configuration_id in front) for r in group]
    return sorted(
        rows, key=lambda r: (r.quality.quality_reference or "", r.workload, r.cost is None, r.cost or 0)
    )


TABLE = Table(
    name="quality",
    row=QualityRow,
    compute=quality_rows,
    columns=(
        "model_short",
        "workload",
        "configuration",
        "server_quantization",
        "level",
        COST,
        "kl_mean",
        "top1_agreement",
        "accuracy",
        "accuracy_ratio",
        "quality_gate",
        "on_pareto_front",
    ),
    section=Section(
        unmeasured="`quantized_models`",
        heading="Quality beside cost: quantizations against their reference",
        anchor="quality",
        table_id="quality-table",
        variables=lambda rows: {"min_ratio": GATE_ACCURACY_RATIO, "max_kl": GATE_MEAN_KL},
        text="""\
<p>Each configuration of a quantization matrix against its reference (the model's bf16 checkpoint, served
beside it in the same campaign): its cost at its best level under the SLOs, how far its next-token
distributions are from the reference's over the project's probe prompts (top-20 KL divergence in nats, a
lower bound of the full-vocabulary KL, and how often the most likely token agrees), and its accuracy on the
project's generated exact-answer task through lm-eval, with its share of the reference's on the same
questions. The reference's own row compares it with itself (its prompts in another order): the noise floor.
The quality gate a configuration must pass to be the headline's answer: at least
{{ "%.0f" | format(min_ratio * 100) }}% of the reference's accuracy (MLPerf Inference's rule) and a mean KL of
at most {{ max_kl }} nats, each decided by its 95% interval (accuracy: Wilson score; its share: a paired
bootstrap over the questions; mean KL: a t interval over prompts); <em>undecided</em> means more questions
or prompts would decide it. On the Pareto front: no other configuration of the model is at most as costly
and at least as accurate. The task shows whether a quantization keeps what its reference answers on
single-step questions (next number, first letter, capitals, copying); it says nothing of reasoning or
knowledge, which a 135M model has little of: for a larger model, import lm-eval's own tasks' results.
{{ intervals_short }}</p>""",
    ),
)
