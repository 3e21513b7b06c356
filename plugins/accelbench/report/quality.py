"""A `quality` row (accelbench.lake.quality) in words, and its quality gate (accelbench.quality.quality_gate):
what the campaign's summary logs and the report shows beside each configuration's cost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.core.intervals import CONFIDENCE, Interval
from accelbench.lake.schemas import LakeRow
from accelbench.quality.quality_gate import GATE_ACCURACY_RATIO, GATE_MEAN_KL, QualityVerdict, gate
from accelbench.report.model import Point, QualityGrade
from accelbench.report.records import figure


def _interval(row: Mapping[str, Any], name: str, low: str, high: str, method: str) -> Interval | None:
    if row.get(name) is None:
        return None
    return Interval(row[name], row.get(low), row.get(high), CONFIDENCE, row.get(method) or "")


def quality_gate(
    row: Mapping[str, Any], min_ratio: float = GATE_ACCURACY_RATIO, max_kl: float = GATE_MEAN_KL
) -> tuple[QualityVerdict, str]:
    """The row's verdict against the gate, and why."""
    ratio = _interval(
        row, "accuracy_ratio", "accuracy_ratio_low", "accuracy_ratio_high", "accuracy_ratio_method"
    )
    kl = _interval(row, "kl_mean", "kl_mean_low", "kl_mean_high", "fidelity_method")
    return gate(ratio, kl, min_ratio, max_kl)


def _bounds(low: float | None, high: float | None, fmt: str) -> str:
    return "[" + ", ".join("-" if v is None else format(v, fmt) for v in (low, high)) + "]"


def quality_text(row: LakeRow) -> str:
    """ "quality m8g-xlarge-...: <model> (W8A8 ...) vs <reference>: top-20 KL mean 0.0530 [0.0450, 0.0620],
    top-1 81.6% [..], accuracy 71.0% [..] = 97.3% of the reference's [..]; gate undecided: ..." """
    parts = []
    if row.get("kl_mean") is not None:
        kl = _bounds(row["kl_mean_low"], row["kl_mean_high"], ".4f")
        parts.append(
            f"top-{row['top_k']} KL mean {row['kl_mean']:.4f} {kl} nats (noise floor "
            f"{row['noise_kl_mean']:.4f}), top-1 agreement {row['top1_agreement']:.1%} "
            f"{_bounds(row['top1_low'], row['top1_high'], '.1%')}"
        )
    if row.get("accuracy") is not None:
        text = (
            f"accuracy {row['accuracy']:.1%} {_bounds(row['accuracy_low'], row['accuracy_high'], '.1%')} on "
            f"{row['questions']} questions of {row['task']}"
        )
        if row.get("accuracy_ratio") is not None:
            text += (
                f" = {row['accuracy_ratio']:.1%} of the reference's "
                f"{_bounds(row['accuracy_ratio_low'], row['accuracy_ratio_high'], '.1%')}"
            )
        parts.append(text)
    verdict, why = quality_gate(row)
    what = "the reference against itself" if row.get("is_reference") else f"against {row['reference_model']}"
    served = f" ({row['server_quantization']})" if row.get("server_quantization") else ""
    error = f"; missing: {row['error']}" if row.get("error") else ""
    return (
        f"quality {row['spec_id']} on {row['instance_type']}: {row['model']}{served} {what}: "
        f"{'; '.join(parts) or 'nothing measured'}; gate {verdict}: {why}{error}"
    )


def _spec_ids(point: Point) -> set[str]:
    """The specs a point's runs came from (a run id is `<campaign>/<spec id>/<level>`)."""
    return {rid.split("/")[-2] for rid in point.run_ids if rid.count("/") >= 2}


def _imported_for(point: Point, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Imported quality rows (`accelbench import-quality`) of the point's configuration: its model, and its
    instance type and vLLM version where the import named them."""
    return [
        q
        for q in rows
        if q.get("source") == "imported"
        and q["model"] == point.model
        and q.get("instance_type") in (None, point.instance_type)
        and q.get("vllm_version") in (None, point.vllm_version)
    ]


def grade(point: Point, rows: Sequence[Mapping[str, Any]]) -> tuple[QualityGrade, str | None]:
    """(the quality of the point's configuration with its gate, the reference model to compare the point
    among where it is another model's quantized checkpoint): the newest campaign's row of its specs, else
    the newest imported row of its model (and instance type and version, where named). A quantized
    checkpoint's point is compared with its reference model's configurations, so the headline chooses among
    quantizations too."""
    by_spec = {q["spec_id"]: q for q in rows if q.get("source") != "imported"}
    found = [by_spec[s] for s in _spec_ids(point) if s in by_spec] or _imported_for(point, rows)
    if not found:
        return QualityGrade(), None
    q = max(found, key=lambda r: (str(r.get("date") or ""), r["campaign_id"], r["spec_id"]))
    verdict, why = quality_gate(q)
    graded = QualityGrade(
        quality_reference=q["reference_model"],
        quality_gate=verdict,
        quality_why=why,
        kl_mean=figure(q, "kl_mean"),
        top1_agreement=q.get("top1_agreement"),
        accuracy=figure(q, "accuracy"),
        accuracy_ratio=figure(q, "accuracy_ratio"),
        server_quantization=q.get("server_quantization"),
    )
    reference = q["reference_model"]
    return graded, reference if reference and reference != point.model else None
