"""Trace replays: per trace workload's point (a configuration at one time-scale of one trace), the trace's
own shape beside the latencies it produced, so a reader sees which bursts broke an SLO: the arrivals per
second and the slowest TTFT over the replay's time, in TIME_BINS equal bins (its repeats pooled), the
busiest and the slowest bin, and the trace's length percentiles (from its identity on the lake's rows)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from accelbench.lake.schemas import LakeRow
from accelbench.report.model import INLINE
from accelbench.report.table import Inputs, Section, Table

TIME_BINS = 24
BARS = "▁▂▃▄▅▆▇█"
NO_SAMPLES = "no request samples"  # a replay's shape without its requests' samples
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


@dataclass(frozen=True, slots=True)
class ReplayShape:
    """A replay's arrivals per second and slowest TTFT over its spans, as bars, and the busiest and the
    slowest span in words."""

    arrivals_by_time: str = NO_SAMPLES
    ttft_by_time: str = NO_SAMPLES
    busiest_bin: str = NO_SAMPLES
    slowest_bin: str = NO_SAMPLES


@dataclass(frozen=True, slots=True)
class TraceReplay:
    """A trace replayed at a time-scale (one point): what the trace looked like and its shape over the
    replay (`replay_shape`, from its repeats' request samples), beside the point's p99 TTFT."""

    workload: str
    configuration: str
    level: str
    p99_ttft_ms: float | None
    point_id: str
    trace_sha256: str
    time_scale: float
    trace_lengths: str
    shape: ReplayShape = field(default=ReplayShape(), metadata=INLINE)


def replay_shape(starts_ms: np.ndarray, ttfts_ms: np.ndarray, bins: int = TIME_BINS) -> ReplayShape:
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

    return ReplayShape(
        arrivals_by_time=sparkline(arrivals),
        ttft_by_time=sparkline(slowest),
        busiest_bin=f"{at(busy)}: {arrivals[busy]:.2g} arrivals/s, slowest TTFT {slowest[busy]:.0f} ms",
        slowest_bin=f"{at(slow)}: slowest TTFT {slowest[slow]:.0f} ms, {arrivals[slow]:.2g} arrivals/s",
    )


def _replays(inputs: Inputs) -> list[TraceReplay]:
    runs = {r["run_id"]: r for r in inputs.runs if r.get("run_id")}
    out = []
    for p in inputs.points:
        if not p.config.trace_sha256:
            continue
        starts, ttfts = [], []
        for run_id in p.run_ids:
            sent = inputs.samples.sends.get(run_id)  # request by request: send time, TTFT (ms)
            if sent is not None and sent[0].size:
                starts.append(sent[0] - sent[0].min())
                ttfts.append(sent[1])
        first = runs.get(p.run_ids[0] if p.run_ids else "", {})
        shape = replay_shape(np.concatenate(starts), np.concatenate(ttfts)) if starts else ReplayShape()
        out.append(
            TraceReplay(
                workload=p.workload,
                configuration=p.configuration,
                level=p.level,
                p99_ttft_ms=p.p99_ttft_ms.estimate,
                point_id=p.point_id,
                trace_sha256=p.config.trace_sha256,
                time_scale=p.level_value,
                trace_lengths=_lengths(first),
                shape=shape,
            )
        )
    return sorted(out, key=lambda r: (r.workload, r.configuration, r.time_scale or 0))


TABLE = Table(
    name="trace_replays",
    row=TraceReplay,
    compute=_replays,
    columns=COLUMNS,
    listed_as="Trace replays",
    section=Section(
        unmeasured="`trace`",
        heading="Trace replays",
        anchor="trace-replays",
        table_id="trace-replays-table",
        text=f"<p>Each timed trace replayed at a time-scale (2x: its arrivals twice as fast), a workload of "
        f"its own (never pooled with another trace or a synthetic workload). Beside its latencies, the "
        f"trace's own shape over the replay, in {TIME_BINS} equal spans of time from its first request to "
        "its last: arrivals per second, and the slowest time to first token of the requests sent in each "
        "span (both scaled to their own largest, repeats pooled), so a burst that broke an SLO shows as a "
        "tall bar under a tall bar. The p99 TTFT is the point's, with its interval in the points table.</p>",
    ),
)
