"""Quality beside cost: per model and workload, each configuration of a quantization matrix with its cost per
1M output tokens (its best level under the SLOs) and its quality against the reference configuration (top-k
KL, top-1 agreement, accuracy and its share of the reference's), with the quality gate's verdict; the
configurations on the cost-quality Pareto front are marked (none cheaper at least as good)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from accelbench.quality.quality_gate import GATE_ACCURACY_RATIO, GATE_MEAN_KL
from accelbench.report.labels import short_model
from accelbench.report.model import QualityGrade
from accelbench.report.records import record, records
from accelbench.report.table import Inputs, Section, Table

# A point's quality columns, as the files hold them.
QUALITY_FIELDS = tuple(record(QualityGrade()))
COST = "on_demand_usd_per_1m_output_tokens"
FIELDS = (
    "configuration",
    "configuration_id",
    "model",
    "workload",
    "instance_type",
    "quantization",
    "level",
    "measured_where",
    COST,
    f"{COST}_low",
    f"{COST}_high",
    "output_throughput",
)


def pareto(rows: list[dict[str, Any]]) -> set[str]:
    """The configuration ids on the front of (lower cost, higher accuracy ratio): none other is at most as
    costly and at least as accurate, and better in one. Rows without both figures are not on it."""
    known = [r for r in rows if r.get(COST) is not None and r.get("accuracy_ratio") is not None]
    front = set()
    for r in known:
        beaten = any(
            o is not r
            and o[COST] <= r[COST]
            and o["accuracy_ratio"] >= r["accuracy_ratio"]
            and (o[COST] < r[COST] or o["accuracy_ratio"] > r["accuracy_ratio"])
            for o in known
        )
        if not beaten:
            front.add(r["configuration_id"])
    return front


def quality_rows(inputs: Inputs) -> list[dict[str, Any]]:
    """One row per configuration with a quality row: its best level under the SLOs (cost), else none."""
    # the points' columns, as the files hold them (not typed yet)
    best = {b.point.configuration_id: record(b) for b in inputs.best}
    configs: dict[str, dict[str, Any]] = {}
    for p in records(inputs.points):
        if p.get("quality_gate") is not None:
            configs.setdefault(p["configuration_id"], p)
    rows = []
    for cid, p in configs.items():
        at = best.get(cid, {})
        row = {k: p.get(k) for k in FIELDS} | {k: p.get(k) for k in QUALITY_FIELDS}
        row |= {k: at.get(k) for k in (COST, f"{COST}_low", f"{COST}_high", "level", "output_throughput")}
        row["model_short"] = short_model(p.get("quality_reference") or p["model"])  # the model it answers for
        rows.append(row)
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["quality_reference"], row["workload"])].append(row)
    for group in groups.values():
        front = pareto(group)
        for row in group:
            row["on_pareto_front"] = row["configuration_id"] in front
    return sorted(
        rows, key=lambda r: (r["quality_reference"], r["workload"], r.get(COST) is None, r.get(COST) or 0)
    )


TABLE = Table(
    name="quality",
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
        heading="Quality beside cost: quantizations against their reference",
        anchor="quality",
        table_id="quality-table",
        omit_when_empty=True,
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
