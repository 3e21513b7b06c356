"""The words a reader sees for a point's parts: the model, the workload, the configuration, the load
level, a search's bracket and the SLOs it held."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accelbench.core.levels import Level
from accelbench.core.slos import LIMITS
from accelbench.core.workloads import DEFAULT_WORKLOAD, trace_words
from accelbench.lake.schemas import LakeRow
from accelbench.report.keys import WARMUPS_IN_WINDOW_LABEL


def short_model(model: str | None) -> str:
    """The id's last part ("Qwen2.5-0.5B-Instruct"): tables stay narrow; the full id is on hover."""
    return str(model or "?").rstrip("/").rsplit("/", 1)[-1]


def trace_label(row: Mapping[str, Any]) -> str | None:
    """A lake row's trace in words (`core.workloads.trace_words`) from its `trace_*` columns, or None."""
    if not row.get("trace_sha256"):
        return None
    figures = (row.get(k) or 0 for k in ("trace_requests", "trace_duration_s", "trace_mean_rate"))
    return trace_words(str(row.get("trace_name")), str(row["trace_sha256"]), *figures)


def workload_label(p: Mapping[str, Any]) -> str:
    """ "random 128→32" (± the length range), what the point's requests looked like; with the profile's
    name in front for a named workload ("chat: random 256→128 ±50% (chat)"), the shared prefix and the
    chat endpoint when they apply."""
    dataset = p.get("dataset") or "unknown dataset"
    if words := trace_label(p):  # a trace: its name and identity, never its longest lengths
        return f"{p.get('workload') or 'trace'}: {words}"
    if p.get("input_len") is None or p.get("output_len") is None:
        return f"{dataset}, lengths not recorded"
    spread = f" ±{p['range_ratio']:.0%}" if p.get("range_ratio") else ""
    text = f"{dataset} {p['input_len']}→{p['output_len']}{spread}"
    if p.get("prefix_len"):
        text += f", {p['prefix_len']}-token shared prefix"
    if p.get("endpoint") == "chat":
        text += " (chat)"
    name = p.get("workload")
    return f"{name}: {text}" if name and name != DEFAULT_WORKLOAD else text


def configuration_label(p: Mapping[str, Any]) -> str:
    """ "m8g.xlarge · vLLM 0.32.0 · TP1 · bfloat16" plus quantization and engine arguments when set, and
    "warm-ups in the measured window" for runs from before per-level warm-ups ran apart."""
    parts = [
        p["instance_type"],
        f"vLLM {p.get('vllm_version') or '?'}",
        f"TP{p.get('tensor_parallel_size') or 1}",
    ]
    parts += [str(p[k]) for k in ("dtype", "quantization", "engine_args") if p.get(k)]
    if p.get("warmups_in_window"):
        parts.append(WARMUPS_IN_WINDOW_LABEL)
    return " · ".join(parts)


def level_label(kind: str, value: float) -> str:
    """ "concurrency 16", "4 req/s" or "2x the trace": the load level as the form asked for it."""
    if kind == "scale":
        return Level("scale", value).words
    return f"concurrency {value:g}" if kind == "concurrency" else f"{value:g} req/s"


def bracket_text(passing: float | None, failing: float | None) -> str | None:
    """ "[5, 6]": a search's bracket, an open end left blank ("[4, ]"); None when neither end exists."""
    ends = ["" if end is None else f"{end:g}" for end in (passing, failing)]
    return f"[{ends[0]}, {ends[1]}]" if any(ends) else None


def slos_text(capacity: LakeRow) -> str | None:
    """ "p99 TTFT <= 2000 ms, error rate <= 1%": the SLOs a search held (`capacities.slo_*`; None in
    rows written before schema 5)."""
    held = []
    for limit in LIMITS:
        bound = capacity.get(f"slo_{limit.param}")
        if bound is not None:
            held.append(
                f"{limit.label} <= {bound:.0%}" if limit.unit == "%" else f"{limit.label} <= {bound:g} ms"
            )
    return ", ".join(held) or None
