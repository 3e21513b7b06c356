"""A `quality` row (accelbench.lake.quality) in words, and its quality gate (accelbench.core.quality): what
the campaign's summary logs and the report shows beside each configuration's cost."""

from __future__ import annotations

from typing import Any

from accelbench.core.intervals import CONFIDENCE, Interval
from accelbench.core.quality import GATE_ACCURACY_RATIO, GATE_MEAN_KL, Verdict, gate
from accelbench.report.points import comparison_id


def _interval(row: dict[str, Any], name: str, low: str, high: str, method: str) -> Interval | None:
    if row.get(name) is None:
        return None
    return Interval(row[name], row.get(low), row.get(high), CONFIDENCE, row.get(method) or "")


def quality_gate(
    row: dict[str, Any], min_ratio: float = GATE_ACCURACY_RATIO, max_kl: float = GATE_MEAN_KL
) -> tuple[Verdict, str]:
    """The row's verdict against the gate, and why."""
    ratio = _interval(
        row, "accuracy_ratio", "accuracy_ratio_low", "accuracy_ratio_high", "accuracy_ratio_method"
    )
    kl = _interval(row, "kl_mean", "kl_mean_low", "kl_mean_high", "fidelity_method")
    return gate(ratio, kl, min_ratio, max_kl)


def _bounds(low: float | None, high: float | None, fmt: str) -> str:
    return "[" + ", ".join("-" if v is None else format(v, fmt) for v in (low, high)) + "]"


def quality_text(row: dict[str, Any]) -> str:
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


# What a point carries of its configuration's quality (null: not measured, or a configuration outside a
# quantization matrix, which the gate does not apply to).
POINT_FIELDS = (
    "quality_reference",
    "quality_gate",
    "quality_why",
    "kl_mean",
    "kl_mean_low",
    "kl_mean_high",
    "top1_agreement",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "accuracy_ratio",
    "accuracy_ratio_low",
    "accuracy_ratio_high",
    "server_quantization",
)


def _spec_ids(point: dict[str, Any]) -> set[str]:
    """The specs a point's runs came from (a run id is `<campaign>/<spec id>/<level>`)."""
    return {rid.split("/")[-2] for rid in point.get("run_ids") or [] if rid.count("/") >= 2}


def _imported_for(point: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Imported quality rows (`accelbench import-quality`) of the point's configuration: its model, and its
    instance type and vLLM version where the import named them."""
    return [
        q
        for q in rows
        if q.get("source") == "imported"
        and q["model"] == point["model"]
        and q.get("instance_type") in (None, point.get("instance_type"))
        and q.get("vllm_version") in (None, point.get("vllm_version"))
    ]


def mark_quality(points: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each point with its configuration's quality and gate: the newest campaign's row of its specs, else
    the newest imported row of its model (and instance type and version, where named); a quantized
    checkpoint's point is compared with its reference model's configurations (its comparison id is the
    reference's), so the headline chooses among quantizations too."""

    def newest(found: list[dict[str, Any]]) -> dict[str, Any]:
        return max(found, key=lambda r: (str(r.get("date") or ""), r["campaign_id"], r["spec_id"]))

    by_spec = {q["spec_id"]: q for q in rows if q.get("source") != "imported"}
    for p in points:
        found = [by_spec[s] for s in _spec_ids(p) if s in by_spec] or _imported_for(p, rows)
        p |= dict.fromkeys(POINT_FIELDS)
        if not found:
            continue
        q = newest(found)
        verdict, why = quality_gate(q)
        p |= {k: q.get(k) for k in POINT_FIELDS if k in q}
        p |= {"quality_reference": q["reference_model"], "quality_gate": verdict, "quality_why": why}
        if q["reference_model"] and q["reference_model"] != p["model"]:
            p["comparison_id"] = comparison_id(p, q["reference_model"])
    return points
