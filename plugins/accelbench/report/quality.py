"""A `quality` row (accelbench.lake.quality) in words, and its quality gate (accelbench.core.quality): what
the campaign's summary logs and the report shows beside each configuration's cost."""

from __future__ import annotations

from typing import Any

from accelbench.core.intervals import CONFIDENCE, Interval
from accelbench.core.quality import GATE_ACCURACY_RATIO, GATE_MEAN_KL, Verdict, gate


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
