"""Throughput against p99 latency: each configuration's load levels as a curve, a panel per workload and
latency (TTFT, TPOT, E2EL), the SLOs as dashed lines, 95% intervals as bars both ways.

Latency axes start at zero; the throughput axis is logarithmic when the throughputs span more than
LOG_SCALE_SPREAD-fold (CPU next to GPU), else from zero too. Hover a point for its configuration, level,
throughput and latency with their intervals; the level is no longer printed beside each marker (labels of
neighbouring curves collided).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accelbench.report.charts.spec import (
    HEIGHT,
    LATENCIES,
    SLO_COLOUR,
    WIDTH,
    SloLimits,
    Spec,
    bar,
    colour,
    dashes,
    error_bar,
    faded,
    legend_name,
    legend_toggle,
    level,
    quantitative,
    row_facet,
    top,
    where,
    with_interval,
)
from accelbench.report.records import Record

LOG_SCALE_SPREAD = 20  # a throughput axis spanning more than this factor is drawn logarithmic
HEADROOM = 1.1  # a panel's view past its largest estimate (or SLO)


def workload_order(p: Record) -> tuple[Any, ...]:
    """Workloads by dataset then lengths (128→32 before 4096→512), not by label text."""
    return (str(p.get("dataset")), p.get("input_len") or 0, p.get("output_len") or 0, p["workload"])


def _data(rows: Sequence[Record], slos: SloLimits) -> list[Record]:
    """A datum per point and latency it has: the estimates, the bars' ends, the tooltip's words."""
    out = []
    for p in rows:
        if p.get("output_throughput") is None:
            continue
        x_low, x_high = bar(p, "output_throughput")
        for column, name, attr in LATENCIES:
            if p.get(column) is None:
                continue
            y_low, y_high = bar(p, column)
            out.append(
                {
                    "series": legend_name(p),
                    "workload": p["workload"],
                    "latency": name,
                    "x": p["output_throughput"],
                    "x_low": x_low,
                    "x_high": x_high,
                    "y": p[column],
                    "y_low": y_low,
                    "y_high": y_high,
                    "slo": getattr(slos, attr),
                    "where": where(p),
                    "level": level(p),
                    "model": p["model"],
                    "throughput_text": with_interval(p, "output_throughput", " tokens/s"),
                    "latency_text": f"{name} {with_interval(p, column, ' ms')}",
                    "measured": p.get("measured_where") or f"host: {p.get('host')}",
                }
            )
    return out


def _clip(data: list[Record], log: bool) -> None:
    """The bars' ends within each panel's view (the estimates' and the SLO's, plus headroom, as the
    matplotlib plots had them): a very wide interval runs to the panel's edge, and its tooltip still says
    it whole; on a log axis, a bar's end at or below zero stops at the panel's left."""
    tops: dict[tuple[str, str], float] = {}
    for d in data:
        key = (d["workload"], d["latency"])
        tops[key] = max(tops.get(key, 0.0), d["y"] * HEADROOM, (d["slo"] or 0) * HEADROOM)
    right: dict[str, float] = {}
    lowest: dict[str, float] = {}
    for d in data:
        right[d["workload"]] = max(right.get(d["workload"], 0.0), d["x"] * HEADROOM)
        if d["x"] > 0:
            lowest[d["workload"]] = min(lowest.get(d["workload"], d["x"]), d["x"])
    for d in data:
        top_y, top_x = tops[(d["workload"], d["latency"])], right[d["workload"]]
        if d["y_high"] is not None:
            d["y_high"] = min(d["y_high"], top_y)
        if d["x_high"] is not None:
            d["x_high"] = min(d["x_high"], top_x)
        if log and d["x_low"] is not None:
            d["x_low"] = max(d["x_low"], lowest.get(d["workload"], float(d["x"])) / 1.5)


def _x(data: list[Record]) -> Spec:
    positive = [d["x"] for d in data if d["x"] > 0]
    log = bool(positive) and max(positive) > LOG_SCALE_SPREAD * min(positive)
    _clip(data, log)
    if log:
        return quantitative("x", "output tokens/s (log scale)", scale={"type": "log"})
    return quantitative("x", "output tokens/s", scale={"zero": True})


def throughput_vs_latency(rows: Sequence[Record], slos: SloLimits) -> Spec | None:
    """The curves as a Vega-Lite spec; None when no point has a throughput."""
    data = _data(rows, slos)
    if not data:
        return None
    x = _x(data)
    y = quantitative("y", "p99 latency (ms)", scale={"zero": True})
    workloads = sorted(
        {d["workload"]: d for d in data},
        key=lambda w: workload_order(next(p for p in rows if p["workload"] == w)),
    )
    tooltip = [
        {"field": "series", "title": "configuration"},
        {"field": "level", "title": "load level"},
        {"field": "throughput_text", "title": "output throughput"},
        {"field": "latency_text", "title": "latency"},
        {"field": "measured", "title": "measured"},
        {"field": "model", "title": "model"},
    ]
    layers: list[Spec] = [
        {
            "mark": {"type": "line", "strokeWidth": 1.5},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour(),
                "strokeDash": dashes(),
                "detail": {"field": "series"},
                "order": {"field": "x", "type": "quantitative"},
                "opacity": faded(),
            },
        },
        error_bar(x, y, "y_low", "y_high", strokeWidth=1),
        error_bar(x, y, "x_low", "x_high", along="x", strokeWidth=1),
        {
            "params": [legend_toggle()],
            "mark": {"type": "point", "filled": True, "size": 40},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour(),
                "shape": {
                    "field": "where",
                    "type": "nominal",
                    "title": "measured on",
                    "scale": {
                        "domain": ["instance", "imported", "local host"],
                        "range": ["circle", "diamond", "square"],
                    },
                },
                "opacity": faded(),
                "tooltip": tooltip,
            },
        },
        {
            "transform": [
                {"filter": "isValid(datum.slo)"},
                {"aggregate": [{"op": "max", "field": "slo", "as": "slo"}]},
                {"calculate": "'SLO ' + format(datum.slo, ',') + ' ms'", "as": "slo_text"},
            ],
            "layer": [
                {
                    "mark": {"type": "rule", "color": SLO_COLOUR, "strokeDash": [5, 3]},
                    "encoding": {"y": y | {"field": "slo"}},
                },
                {
                    "mark": {
                        "type": "text",
                        "color": SLO_COLOUR,
                        "align": "right",
                        "baseline": "bottom",
                        "dy": -2,
                        "fontSize": 9,
                    },
                    "encoding": {
                        "y": y | {"field": "slo"},
                        "x": {"value": WIDTH - 2},
                        "text": {"field": "slo_text"},
                    },
                },
            ],
        },
    ]
    return top(
        "Throughput against p99 latency per configuration and load level, with 95% intervals and the SLOs",
        {"points": data},
        data={"name": "points"},
        facet={
            "row": row_facet("workload", sort=workloads),
            "column": {
                "field": "latency",
                "type": "nominal",
                "sort": [n for _c, n, _a in LATENCIES],
                "title": None,
            },
        },
        spec={"width": WIDTH, "height": HEIGHT, "layer": layers},
        resolve={"scale": {"y": "independent", "x": "independent"}, "axis": {"y": "independent"}},
        spacing={"row": 24, "column": 36},
    )
