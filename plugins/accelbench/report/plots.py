"""The report's plots as inline SVG text (matplotlib), so the HTML needs no file or network to open.

Figures are built with `matplotlib.figure.Figure` (no pyplot global state, safe in a worker) and
saved with a fixed hash salt and no date, so the same tables give the same bytes.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from accelbench.report.model import SERVER_KEY, version_key

LOG_SCALE_SPREAD = 20  # a throughput axis spanning more than this factor is drawn logarithmic


def _series_name(p: dict[str, Any], *, version: bool = True) -> str:
    model = (
        str(p.get("model") or "?").rstrip("/").rsplit("/", 1)[-1]
    )  # the id's last part: legends stay short
    name = f"{p['accelerator_type']} {p['instance_type']} {model}"
    if p.get("quantization"):
        name += f" {p['quantization']}"
    if version:
        name += f" vLLM {p['vllm_version'] or '?'}"
    return name


def _svg(fig: Figure, salt: str) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: the SVG goes inside HTML


def throughput_vs_latency(points: Sequence[dict[str, Any]]) -> str | None:
    """Per server configuration, its load levels: output tokens/s against p99 TTFT and p99 TPOT."""
    curves: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        if p.get("output_throughput") is not None:
            curves[tuple(p[k] for k in SERVER_KEY)].append(p)
    if not curves:
        return None
    fig = Figure(figsize=(11, 4.2))
    axes = fig.subplots(1, 2)
    for key in sorted(curves, key=lambda k: tuple(str(v) for v in k)):
        rows = sorted(curves[key], key=lambda p: p["output_throughput"])
        xs = [p["output_throughput"] for p in rows]
        for ax, metric in zip(axes, ("p99_ttft_ms", "p99_tpot_ms"), strict=True):
            ax.plot(xs, [p[metric] for p in rows], marker="o", label=_series_name(rows[0]))
            for p in rows:
                if p[metric] is not None:
                    ax.annotate(f"{p['level_value']:g}", (p["output_throughput"], p[metric]), fontsize=7)
    spread = [p["output_throughput"] for rows in curves.values() for p in rows if p["output_throughput"] > 0]
    for ax, title in zip(axes, ("p99 TTFT (ms)", "p99 TPOT (ms)"), strict=True):
        if spread and max(spread) > LOG_SCALE_SPREAD * min(spread):  # CPU and GPU on one axis
            ax.set_xscale("log")
        ax.set_xlabel("output tokens per s (median over repeats)")
        ax.set_ylabel(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Throughput vs latency per server (labels: load level)")
    return _svg(fig, "throughput-latency")


def cost_at_slo(best: Sequence[dict[str, Any]]) -> str | None:
    """USD per 1M output tokens at each server's best level under the SLOs, on-demand and spot."""
    priced = [
        p
        for p in best
        if p.get("on_demand_usd_per_1m_output_tokens") is not None
        or p.get("spot_usd_per_1m_output_tokens") is not None
    ]
    if not priced:
        return None
    priced = sorted(priced, key=lambda p: p.get("on_demand_usd_per_1m_output_tokens") or float("inf"))
    fig = Figure(figsize=(9, max(2.0, 0.8 + 0.45 * len(priced))))
    ax = fig.subplots()
    ys = range(len(priced))
    height = 0.4
    for offset, model, colour in ((-height / 2, "on_demand", "tab:blue"), (height / 2, "spot", "tab:orange")):
        values = [p.get(f"{model}_usd_per_1m_output_tokens") or 0 for p in priced]
        if not any(values):
            continue  # e.g. no spot history offline: no empty legend entry
        ax.barh([y + offset for y in ys], values, height=height, color=colour, label=model.replace("_", "-"))
    ax.set_yticks(list(ys), [f"{_series_name(p)} @ {p['level_value']:g}" for p in priced], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("USD per 1M output tokens at the best level under the SLOs")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig, "cost-at-slo")


def version_trend(best: Sequence[dict[str, Any]]) -> str | None:
    """Output tokens/s at the best level under the SLOs, per vLLM version (semantic order)."""
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in best:
        if p.get("output_throughput") is not None:
            lines[_series_name(p, version=False)].append(p)
    if not lines:
        return None
    versions = sorted({p["vllm_version"] for rows in lines.values() for p in rows}, key=version_key)
    at = {v: i for i, v in enumerate(versions)}
    fig = Figure(figsize=(9, 4))
    ax = fig.subplots()
    for name in sorted(lines):
        rows = sorted(lines[name], key=lambda p: version_key(p["vllm_version"]))
        ax.plot(
            [at[p["vllm_version"]] for p in rows], [p["output_throughput"] for p in rows], "o-", label=name
        )
    ax.set_xticks(range(len(versions)), [str(v) for v in versions])
    ax.set_xlabel("vLLM version")
    ax.set_ylabel("output tokens per s at the best level")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _svg(fig, "version-trend")


PLOTS = {
    "throughput_vs_latency": ("Throughput vs latency", throughput_vs_latency, "points"),
    "cost_at_slo": ("Cost per 1M output tokens at the SLO", cost_at_slo, "best_under_slo"),
    "version_trend": ("Version trend", version_trend, "best_under_slo"),
}
