"""What a configuration costs: USD per 1M output tokens at its best level under the SLOs as bars
(on-demand and spot, ranked within one model and workload, never across), and the price-performance
frontier as a scatter of cost against a p99 latency to explore (filters by tier, instance family, model,
quantization and vLLM version; the latency from a dropdown).

Only points measured on their instance type (or imported, on the one stated) have a price: local-host
results are never in these charts.
"""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.report.charts.latency import workload_order
from accelbench.report.charts.spec import (
    HEIGHT,
    LATENCIES,
    WIDTH,
    SloLimits,
    Spec,
    bar,
    colour,
    error_bar,
    faded,
    filter_fields,
    filters,
    legend_name,
    legend_toggle,
    level,
    number,
    quantitative,
    row_facet,
    top,
    where,
    with_interval,
)
from accelbench.report.pricing import order_by_cost
from accelbench.report.records import Record

KINDS = (("on_demand", "on-demand"), ("spot", "spot"))
ROW_PX = 34  # a configuration's row: its on-demand and spot bars and their value labels


def slo_words(slos: SloLimits) -> str:
    """The SLOs in words (p99 TTFT ≤ 2000 ms, ...), or that none was set: the chart says what it held."""
    held = [f"{name} ≤ {getattr(slos, attr):g} ms" for _c, name, attr in LATENCIES if getattr(slos, attr)]
    return ", ".join(held) if held else "no latency SLO set"


def _priced(rows: Sequence[Record]) -> list[Record]:
    return [
        p
        for p in rows
        if p.get("measured_on_instance")
        and any(p.get(f"{kind}_usd_per_1m_output_tokens") is not None for kind, _ in KINDS)
    ]


def _rank(p: Record) -> tuple[object, ...]:
    """By model and workload, cheapest first within each."""
    return (
        p["model_short"],
        workload_order(p),
        order_by_cost(
            p.get("on_demand_usd_per_1m_output_tokens"),
            p.get("spot_usd_per_1m_output_tokens"),
            p["configuration"],
            p["workload"],
        ),
    )


def cost_at_slo(rows: Sequence[Record], slos: SloLimits) -> Spec | None:
    """The cost bars as a Vega-Lite spec; None when nothing measured on its instance type has a price."""
    priced = sorted(_priced(rows), key=_rank)
    if not priced:
        return None
    data = []
    for rank, p in enumerate(priced):
        for kind, words in KINDS:
            column = f"{kind}_usd_per_1m_output_tokens"
            if p.get(column) is None:
                continue  # a missing price: no bar, never a 0
            low, high = bar(p, column)
            data.append(
                {
                    "series": legend_name(p),
                    "bar": f"{p['configuration']} · {p['model_short']} @ {level(p)}"
                    + ("" if where(p) == "instance" else f" ({where(p)})"),
                    "rank": rank,
                    "group": f"{p['model_short']} · {p['workload']}",
                    "pricing": words,
                    "cost": p[column],
                    "low": low,
                    "high": high,
                    "label": (number(p[column]) if p[column] >= 0.01 else f"{p[column]:.2g}") + f" {words}",
                    "label_at": max(p[column], high or 0),
                    "cost_text": with_interval(p, column, " USD"),
                    "level": level(p),
                    "model": p["model"],
                    "workload": p["workload"],
                }
            )
    groups = list(dict.fromkeys(d["group"] for d in data))
    x_max = max(d["label_at"] for d in data) * 1.6  # room for the value labels
    x = quantitative(
        "cost",
        "USD per 1M output tokens (best level under the SLOs)",
        scale={"domain": [0, x_max], "nice": False},
    )
    y = {
        "field": "bar",
        "type": "nominal",
        "title": None,
        "sort": {"field": "rank", "op": "min"},
        "axis": {"labelLimit": 520},
    }
    tooltip = [
        {"field": "series", "title": "configuration"},
        {"field": "workload", "title": "workload"},
        {"field": "level", "title": "best level"},
        {"field": "pricing", "title": "pricing"},
        {"field": "cost_text", "title": "USD per 1M output tokens"},
        {"field": "model", "title": "model"},
    ]
    offset = {"field": "pricing", "type": "nominal", "sort": [w for _k, w in KINDS]}
    layers: list[Spec] = [
        {
            "params": [legend_toggle()],
            "mark": {"type": "bar"},
            "encoding": {
                "x": x,
                "y": y,
                "yOffset": offset,
                "color": colour(),
                "fillOpacity": {
                    "field": "pricing",
                    "type": "nominal",
                    "title": "pricing",
                    "scale": {"domain": [w for _k, w in KINDS], "range": [1, 0.45]},
                },
                "opacity": faded(),
                "tooltip": tooltip,
            },
        },
        {
            "transform": [{"filter": "isValid(datum.low)"}],
            "mark": {"type": "rule", "color": "#333"},
            "encoding": {"x": x | {"field": "low"}, "x2": {"field": "high"}, "y": y, "yOffset": offset},
        },
        {
            "mark": {"type": "text", "align": "left", "baseline": "middle", "dx": 4, "fontSize": 9},
            "encoding": {
                "x": x | {"field": "label_at"},
                "y": y,
                "yOffset": offset,
                "text": {"field": "label"},
            },
        },
    ]
    return top(
        f"USD per 1M output tokens at each configuration's best level under the SLOs ({slo_words(slos)}), "
        "on-demand and spot, cheapest first within each model and workload, with 95% intervals",
        {"costs": data},
        data={"name": "costs"},
        facet={"row": row_facet("group", sort=groups)},
        spec={"width": 2 * WIDTH, "height": {"step": ROW_PX // 2}, "layer": layers},
        resolve={"scale": {"y": "independent"}},
        title={"text": f"SLOs: {slo_words(slos)}", "anchor": "start", "fontSize": 11, "fontWeight": "normal"},
    )


def frontier(rows: Sequence[Record], slos: SloLimits) -> Spec | None:
    """Each priced best point's cost against a p99 latency (TTFT; a dropdown picks TPOT or E2EL), the
    frontier's points (`on_frontier`, the frontier table's) marked; None when nothing is priced."""
    column = "on_demand_usd_per_1m_output_tokens"
    data = []
    for p in rows:
        if not p.get("measured_on_instance") or p.get(column) is None:
            continue
        low, high = bar(p, column)
        for latency, name, _attr in LATENCIES:
            if p.get(latency) is None:
                continue
            x_low, x_high = bar(p, latency)
            data.append(
                {
                    "series": legend_name(p),
                    "group": f"{p['model_short']} · {p['workload']}",
                    "latency": name,
                    "x": p[latency],
                    "x_low": x_low,
                    "x_high": x_high,
                    "cost": p[column],
                    "low": low,
                    "high": high,
                    "front": "on the frontier" if p.get("on_frontier") else "beaten on cost and latency",
                    "level": level(p),
                    "cost_text": with_interval(p, column, " USD"),
                    "latency_text": f"{name} {with_interval(p, latency, ' ms')}",
                }
                | filter_fields(p)
            )
    if not data:
        return None
    params, kept = filters(data)
    params.insert(
        0,
        {
            "name": "pick_latency",
            "value": LATENCIES[0][1],
            "bind": {"input": "select", "options": [n for _c, n, _a in LATENCIES], "name": "Latency "},
        },
    )
    kept.insert(0, {"filter": "datum.latency === pick_latency"})
    x = quantitative("x", "p99 latency (ms)", scale={"zero": True})
    y = quantitative("cost", "USD per 1M output tokens (on-demand)", scale={"zero": True})
    tooltip = [
        {"field": "series", "title": "configuration"},
        {"field": "level", "title": "best level"},
        {"field": "cost_text", "title": "USD per 1M output tokens"},
        {"field": "latency_text", "title": "latency"},
        {"field": "front", "title": "frontier"},
    ]
    layers: list[Spec] = [
        error_bar(x, y, "low", "high"),
        error_bar(x, y, "x_low", "x_high", along="x"),
        {
            "params": [legend_toggle()],
            "mark": {"type": "point", "filled": True, "size": 70},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour(),
                "shape": {
                    "field": "front",
                    "type": "nominal",
                    "title": None,
                    "scale": {
                        "domain": ["on the frontier", "beaten on cost and latency"],
                        "range": ["diamond", "circle"],
                    },
                },
                "opacity": faded(),
                "tooltip": tooltip,
            },
        },
    ]
    return top(
        "Price-performance: each configuration's cost per 1M output tokens at its best level under the SLOs "
        "against a p99 latency, the frontier marked, with 95% intervals",
        {"best": data},
        data={"name": "best"},
        params=params,
        transform=kept,
        facet={"row": row_facet("group")},
        spec={"width": 2 * WIDTH, "height": HEIGHT + 40, "layer": layers},
        resolve={"scale": {"x": "independent", "y": "independent"}},
    )
