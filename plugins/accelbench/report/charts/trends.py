"""Trends across campaigns: each configuration's (less its vLLM version) cost per 1M output tokens and
p99 TTFT and TPOT at its best level under the SLOs, campaign date by campaign date, the 95% intervals as
bands; a campaign where the vLLM version or the price changed is a distinct marker (and a dashed rule for
a version), and its tooltip says from what to what."""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.report.charts.cost import slo_words
from accelbench.report.charts.spec import (
    HEIGHT,
    WIDTH,
    SloLimits,
    Spec,
    bar,
    colour,
    dashes,
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

METRICS = (  # (column, panel title, unit)
    ("on_demand_usd_per_1m_output_tokens", "USD per 1M output tokens (on-demand)", " USD"),
    ("p99_ttft_ms", "p99 TTFT (ms)", " ms"),
    ("p99_tpot_ms", "p99 TPOT (ms)", " ms"),
)
CHANGES = ("none", "vLLM version", "price", "vLLM version and price")


def _change(r: Record) -> str:
    version, price = r.get("vllm_change"), r.get("price_change")
    return CHANGES[bool(version) + 2 * bool(price)]


def trends(rows: Sequence[Record], slos: SloLimits) -> Spec | None:
    """The trends as a Vega-Lite spec; None without a series measured by two campaigns."""
    data = []
    for r in rows:
        for column, title, unit in METRICS:
            if r.get(column) is None:
                continue
            low, high = bar(r, column)
            data.append(
                {
                    "series": legend_name(r, without_version(r)),
                    "series_id": r["series_id"],
                    "workload": r["workload"],
                    "metric": title,
                    "date": r["campaign_date"],
                    "y": r[column],
                    "low": low if low is not None else r[column],
                    "high": high if high is not None else r[column],
                    "where": where(r),
                    "change": _change(r),
                    "changed": " · ".join(
                        f"{what} {r[k]}"
                        for k, what in (("vllm_change", "vLLM"), ("price_change", "price"))
                        if r.get(k)
                    )
                    or "nothing since the campaign before",
                    "campaign": r["campaign_id"],
                    "version": r.get("vllm_version"),
                    "level": level(r),
                    "value_text": with_interval(r, column, unit),
                }
            )
    if not data:
        return None
    dates = sorted({d["date"] for d in data})
    x = {
        "field": "date",
        "type": "ordinal",
        "sort": dates,
        "title": "campaign date (its first run)",
        "scale": {"domain": dates},
        "axis": {"labelAngle": 0},
    }  # one tick per campaign, its own date
    y = quantitative("y", None, scale={"zero": True})
    tooltip = [
        {"field": "series", "title": "configuration"},
        {"field": "campaign", "title": "campaign"},
        {"field": "date", "title": "campaign date"},
        {"field": "version", "title": "vLLM version"},
        {"field": "level", "title": "best level"},
        {"field": "value_text", "title": "value"},
        {"field": "changed", "title": "changed"},
    ]
    layers: list[Spec] = [
        {
            "mark": {"type": "area", "opacity": 0.18},
            "encoding": {
                "x": x,
                "y": y | {"field": "low"},
                "y2": {"field": "high"},
                "color": colour(),
                "detail": {"field": "series_id"},
                "opacity": faded(0.18),
            },
        },
        {
            "mark": {"type": "line"},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour(),
                "detail": {"field": "series_id"},
                "strokeDash": dashes(),
                "opacity": faded(),
            },
        },
        {
            "transform": [
                {"filter": "datum.change === 'vLLM version' || datum.change === 'vLLM version and price'"}
            ],
            "mark": {"type": "rule", "strokeDash": [2, 3], "strokeWidth": 1},
            "encoding": {"x": x, "color": colour(), "opacity": faded(0.6)},
        },
        {
            "params": [legend_toggle()],
            "mark": {"type": "point", "filled": True, "size": 60},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour(),
                "shape": {
                    "field": "change",
                    "type": "nominal",
                    "title": "changed since the campaign before",
                    "scale": {
                        "domain": list(CHANGES),
                        "range": ["circle", "triangle-up", "square", "diamond"],
                    },
                },
                "opacity": faded(),
                "tooltip": tooltip,
            },
        },
    ]
    return top(
        f"Per configuration, its best level under the SLOs ({slo_words(slos)}) campaign by campaign: cost "
        "per 1M output tokens, p99 TTFT and p99 TPOT with 95% interval bands; vLLM version and price changes "
        "marked",
        {"trends": data},
        data={"name": "trends"},
        facet={
            "row": {
                "field": "metric",
                "type": "nominal",
                "sort": [t for _c, t, _u in METRICS],
                "title": None,
                "header": {
                    "labelAngle": 0,
                    "labelAlign": "left",
                    "labelOrient": "top",
                    "labelFontWeight": "bold",
                },
            },
            "column": {"field": "workload", "type": "nominal", "title": None},
        },
        spec={"width": 2 * WIDTH, "height": HEIGHT - 30, "layer": layers},
        resolve={"scale": {"y": "independent"}},
        spacing={"row": 24, "column": 36},
    )
