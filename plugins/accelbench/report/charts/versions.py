"""Output tokens/s at each configuration's best level under the SLOs per vLLM version (semantic order):
one line per configuration less its version, a panel per workload, 95% intervals as bars."""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.report.charts.cost import slo_words
from accelbench.report.charts.latency import workload_order
from accelbench.report.charts.spec import (
    HEIGHT,
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
    top,
    where,
    with_interval,
    without_version,
)
from accelbench.report.records import Record
from accelbench.report.tables.version_deltas import version_key


def version_trend(rows: Sequence[Record], slos: SloLimits) -> Spec | None:
    """The version trend as a Vega-Lite spec; None when no best point has a throughput."""
    shown = [p for p in rows if p.get("output_throughput") is not None]
    if not shown:
        return None
    versions = sorted({str(p.get("vllm_version")) for p in shown}, key=version_key)
    workloads = [p["workload"] for p in sorted(shown, key=workload_order)]
    data = []
    for p in shown:
        low, high = bar(p, "output_throughput")
        data.append(
            {
                "series": legend_name(p, without_version(p)),
                "workload": p["workload"],
                "version": str(p.get("vllm_version")),
                "y": p["output_throughput"],
                "y_low": low,
                "y_high": high,
                "where": where(p),
                "level": level(p),
                "throughput_text": with_interval(p, "output_throughput", " tokens/s"),
            }
        )
    x = {
        "field": "version",
        "type": "ordinal",
        "sort": versions,
        "title": "vLLM version",
        "axis": {"labelAngle": 0},
        "scale": {"domain": versions},
    }
    y = quantitative("y", "output tokens/s", scale={"zero": True})
    tooltip = [
        {"field": "series", "title": "configuration"},
        {"field": "version", "title": "vLLM version"},
        {"field": "level", "title": "best level"},
        {"field": "throughput_text", "title": "output throughput"},
    ]
    layers: list[Spec] = [
        {
            "mark": {"type": "line"},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour(),
                "strokeDash": dashes(),
                "detail": {"field": "series"},
                "opacity": faded(),
            },
        },
        error_bar(x, y, "y_low", "y_high"),
        {
            "params": [legend_toggle()],
            "mark": {"type": "point", "filled": True, "size": 50},
            "encoding": {"x": x, "y": y, "color": colour(), "opacity": faded(), "tooltip": tooltip},
        },
    ]
    return top(
        f"Output tokens/s at the best level under the SLOs ({slo_words(slos)}) per vLLM version, one line "
        "per configuration less its version, with 95% intervals",
        {"versions": data},
        data={"name": "versions"},
        facet={
            "row": {
                "field": "workload",
                "type": "nominal",
                "sort": list(dict.fromkeys(workloads)),
                "title": None,
                "header": {
                    "labelAngle": 0,
                    "labelAlign": "left",
                    "labelOrient": "top",
                    "labelFontWeight": "bold",
                },
            }
        },
        spec={"width": 2 * WIDTH, "height": HEIGHT, "layer": layers},
        resolve={"scale": {"y": "independent"}},
    )
