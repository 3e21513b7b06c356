"""Trace replays: per trace workload's point (a configuration at one time-scale of one trace), the trace's
own shape beside the latencies it produced, so a reader sees which bursts broke an SLO: the arrivals per
second and the slowest TTFT over the replay's time, in TIME_BINS equal bins (its repeats pooled), the
busiest and the slowest bin, and the trace's length percentiles (from its identity on the lake's rows)."""

from __future__ import annotations

from typing import Any

import numpy as np

from accelbench.lake.schemas import LakeRow
from accelbench.report.records import records
from accelbench.report.table import Inputs, Section, Table

TIME_BINS = 24
BARS = "▁▂▃▄▅▆▇█"
COLUMNS = (
    "workload",
    "configuration",
    "level",
    "trace_lengths",
    "arrivals_by_time",
    "ttft_by_time",
    "busiest_bin",
    "slowest_bin",
    "p99_ttft_ms",
)


def sparkline(values: np.ndarray) -> str:
    """One bar per value, scaled to the largest (all bars low when every value is 0)."""
    top = float(values.max()) if values.size else 0.0
    if top <= 0:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5))] for v in values)


def _lengths(run: LakeRow) -> str:
    """ "prompts p50 416 / p99 624, outputs p50 31 / p99 61" (tokens)"""
    parts = []
    for name, key in (("prompts", "input"), ("outputs", "output")):
        p50, p99 = run.get(f"trace_{key}_p50"), run.get(f"trace_{key}_p99")
        if p50 is not None and p99 is not None:
            parts.append(f"{name} p50 {p50:g} / p99 {p99:g}")
    return ", ".join(parts)


def replay_shape(starts_ms: np.ndarray, ttfts_ms: np.ndarray, bins: int = TIME_BINS) -> dict[str, Any]:
    """Arrivals per second and the slowest TTFT in each of `bins` equal spans of the replay (from its first
    send to its last), with the busiest and the slowest span in words."""
    span = float(starts_ms.max()) if starts_ms.size else 0.0
    edges = np.linspace(0.0, span, bins + 1) if span > 0 else np.array([0.0, 1.0])
    width_s = (edges[1] - edges[0]) / 1000.0
    which = np.clip(np.searchsorted(edges, starts_ms, side="right") - 1, 0, len(edges) - 2)
    arrivals = np.bincount(which, minlength=len(edges) - 1).astype(float) / width_s
    slowest = np.zeros(len(edges) - 1)
    np.maximum.at(slowest, which, ttfts_ms)
    busy, slow = int(np.argmax(arrivals)), int(np.argmax(slowest))

    def at(i: int) -> str:
        return f"{edges[i] / 1000:.1f} to {edges[i + 1] / 1000:.1f} s"

    return {
        "arrivals_by_time": sparkline(arrivals),
        "ttft_by_time": sparkline(slowest),
        "busiest_bin": f"{at(busy)}: {arrivals[busy]:.2g} arrivals/s, slowest TTFT {slowest[busy]:.0f} ms",
        "slowest_bin": f"{at(slow)}: slowest TTFT {slowest[slow]:.0f} ms, {arrivals[slow]:.2g} arrivals/s",
    }


def _replays(inputs: Inputs) -> list[dict[str, Any]]:
    runs = {r["run_id"]: r for r in inputs.runs if r.get("run_id")}
    out = []
    for p in records(inputs.points):  # the points' columns, as the files hold them (not typed yet)
        if not p.get("trace_sha256"):
            continue
        starts, ttfts = [], []
        for run_id in p.get("run_ids") or []:
            got = inputs.samples.by_run.get(run_id, {})
            start, ttft = got.get("start"), got.get("ttft")
            if start is not None and ttft is not None and start.size == ttft.size:
                starts.append(start - start.min())
                ttfts.append(ttft)
        first = runs.get((p.get("run_ids") or [None])[0] or "", {})
        row = {k: p.get(k) for k in ("workload", "configuration", "level", "p99_ttft_ms", "point_id")}
        row |= {"trace_sha256": p["trace_sha256"], "time_scale": p.get("level_value")}
        row["trace_lengths"] = _lengths(first)
        shape = replay_shape(np.concatenate(starts), np.concatenate(ttfts)) if starts else {}
        out.append(row | dict.fromkeys(COLUMNS[4:8], "no request samples") | shape)
    return sorted(out, key=lambda r: (r["workload"], r["configuration"], r["time_scale"] or 0))


TABLE = Table(
    name="trace_replays",
    compute=_replays,
    columns=COLUMNS,
    listed_as="Trace replays",
    section=Section(
        heading="Trace replays",
        anchor="trace-replays",
        table_id="trace-replays-table",
        text=f"<p>Each timed trace replayed at a time-scale (2x: its arrivals twice as fast), a workload of "
        f"its own (never pooled with another trace or a synthetic workload). Beside its latencies, the "
        f"trace's own shape over the replay, in {TIME_BINS} equal spans of time from its first request to "
        "its last: arrivals per second, and the slowest time to first token of the requests sent in each "
        "span (both scaled to their own largest, repeats pooled), so a burst that broke an SLO shows as a "
        "tall bar under a tall bar. The p99 TTFT is the point's, with its interval in the points table.</p>",
        omit_when_empty=True,
    ),
)
