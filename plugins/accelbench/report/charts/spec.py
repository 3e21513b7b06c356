"""What every chart's Vega-Lite spec shares: the words of a point (its level, where it ran, its legend
name), its figures with their 95% intervals as the tooltip says them, the legend that toggles series and
the filters of the explorable charts.

A spec is plain JSON (a dict): the page embeds it and vl-convert draws it as static SVG, so the same
tables give the same bytes. Each datum carries `series` (the legend name: a configuration), whose colour
`accelbench.report.charts.palette` assigns across all the page's charts, and text fields the tooltip
shows as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from accelbench.lake.schemas import IMPORTED_MODE
from accelbench.report.records import Record, figure

Spec = dict[str, Any]  # a Vega-Lite JSON document: its schema is Vega-Lite's, not ours
SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
SERIES = "series"  # the field each chart colours by: one colour per configuration across the page
SHOWN = "shown"  # the legend-bound selection: click a legend entry to show only that series
SLO_COLOUR = "#C0392B"
WIDTH, HEIGHT = 260, 190  # one panel's plot area (px)
NUMBER = ",~f"  # d3 format of the axes: 2,000 and 0.0042, never 2e+3


class SloLimits(Protocol):
    """What the charts need of the SLOs (the report filter or the model's Slos); None: no limit."""

    @property
    def ttft_p99_ms(self) -> float | None: ...
    @property
    def tpot_p99_ms(self) -> float | None: ...
    @property
    def e2el_p99_ms(self) -> float | None: ...


LATENCIES = (  # (point column, name, SLO attribute): one panel each
    ("p99_ttft_ms", "p99 TTFT", "ttft_p99_ms"),
    ("p99_tpot_ms", "p99 TPOT", "tpot_p99_ms"),
    ("p99_e2el_ms", "p99 E2EL", "e2el_p99_ms"),
)


def level(p: Record) -> str:
    """The level as the charts say it: c8 (at most 8 requests in flight) or 2 req/s (arrival rate)."""
    kind, value = p.get("level_kind"), p.get("level_value")
    if value is None:
        return "?"
    if kind == "concurrency":
        return f"c{value:g}"
    if kind == "scale":
        return f"{value:g}x"
    return f"{value:g} req/s" if kind == "rate" else f"{kind} {value:g}"


def where(p: Record) -> str:
    """instance, imported or local host: local results are drawn apart (grey, dashed) and never priced."""
    if p.get("execution_mode") == IMPORTED_MODE:
        return "imported"
    return "instance" if p.get("measured_on_instance") else "local host"


def legend_name(p: Record, configuration: str | None = None) -> str:
    """`<configuration> · <short model>`, then " (local host)" or " (imported)": the series' name."""
    shown = where(p)
    return f"{configuration or p['configuration']} · {p['model_short']}" + (
        "" if shown == "instance" else f" ({shown})"
    )


def without_version(p: Record) -> str:
    """The configuration label less its "vLLM x.y.z" part: for charts across versions."""
    version = f"vLLM {p.get('vllm_version') or '?'}"
    return " · ".join(part for part in p["configuration"].split(" · ") if part != version)


def number(value: float) -> str:
    """Four significant digits with thousands separators (1,234, 0.4167): what a tooltip says."""
    if value == 0 or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def with_interval(p: Record, column: str, unit: str = "") -> str:
    """ "1,200 ms (95% interval 1,000 to 1,380)" (an en dash for "to"); "≥ 1,000" or "≤ 1,380" one-sided;
    the value alone without an interval; "" without a value."""
    found = figure(p, column)
    if found.estimate is None:
        return ""
    text = f"{number(found.estimate)}{unit}"
    low, high = found.low, found.high
    if low is not None and high is not None:
        return f"{text} (95% interval {number(low)}\u2013{number(high)})"
    if low is not None:
        return f"{text} (95% interval ≥ {number(low)})"
    if high is not None:
        return f"{text} (95% interval ≤ {number(high)})"
    return f"{text} (no interval)"


def bar(p: Record, column: str) -> tuple[float | None, float | None]:
    """An error bar's ends: the interval's bounds, the estimate for an unbounded side; (None, None)
    without any bound (no bar is drawn)."""
    found = figure(p, column)
    if found.estimate is None or (found.low is None and found.high is None):
        return None, None
    low = found.low if found.low is not None else found.estimate
    high = found.high if found.high is not None else found.estimate
    return low, high


def family(instance_type: str | None) -> str:
    """An instance type's family (m8g of m8g.xlarge): one of the explorable charts' filters."""
    return (instance_type or "?").split(".", 1)[0]


# The explorable charts' filters: (datum field, dropdown label); their values come from the chart's data.
FILTERS = (
    ("tier", "Tier"),
    ("family", "Instance family"),
    ("model_name", "Model"),
    ("quantization", "Quantization"),
    ("vllm", "vLLM version"),
)


def filter_fields(p: Record) -> Record:
    """The fields the filters select on."""
    return {
        "tier": p.get("accelerator_type") or "?",
        "family": family(p.get("instance_type")),
        "model_name": p.get("model_short") or "?",
        "quantization": p.get("quantization") or p.get("server_quantization") or "none",
        "vllm": p.get("vllm_version") or "?",
    }


def filters(data: Sequence[Record]) -> tuple[list[Spec], list[Spec]]:
    """Dropdowns (one per filter with two or more values in `data`; "all" first) and the transforms that
    keep what they select: (params, transforms) for the top of an explorable spec."""
    params: list[Spec] = []
    transforms: list[Spec] = []
    for name, words in FILTERS:
        values = sorted({str(d[name]) for d in data})
        if len(values) < 2:
            continue
        param = f"pick_{name}"
        params.append(
            {
                "name": param,
                "value": None,
                "bind": {
                    "input": "select",
                    "options": [None, *values],
                    "labels": ["all", *values],
                    "name": f"{words} ",
                },
            }
        )
        transforms.append({"filter": f"{param} === null || datum.{name} === {param}"})
    return params, transforms


def legend_toggle() -> Spec:
    """A click on a legend entry shows that series alone (shift-click adds one; a click elsewhere, all)."""
    return {"name": SHOWN, "select": {"type": "point", "fields": [SERIES]}, "bind": "legend"}


def faded(value: float = 1.0) -> Spec:
    """Opacity: full for the series the legend shows, faint for the others."""
    return {"condition": {"param": SHOWN, "value": value, "empty": True}, "value": 0.08}


def colour(title: str = "configuration") -> Spec:
    """The colour of a series; `accelbench.report.charts.palette.paint` fills in the scale."""
    return {
        "field": SERIES,
        "type": "nominal",
        "title": title,
        "legend": {"labelLimit": 520, "symbolLimit": 60},
    }


def dashes() -> Spec:
    """Local hosts' lines dashed, the instances' solid."""
    return {
        "field": "where",
        "type": "nominal",
        "scale": {"domain": ["instance", "imported", "local host"], "range": [[1, 0], [1, 0], [4, 3]]},
        "legend": None,
    }


def error_bar(x: Spec, y: Spec, low: str, high: str, along: str = "y", **mark: Any) -> Spec:
    """A layer of 95% intervals along `along` ("x" or "y") from the fields `low` to `high`, in the series'
    colours (the legend fades them with their series); rows without a bound draw none."""
    at = {"x": x, "y": y} | {along: (y if along == "y" else x) | {"field": low}, f"{along}2": {"field": high}}
    return {
        "transform": [{"filter": f"isValid(datum.{low})"}],
        "mark": {"type": "rule"} | mark,
        "encoding": at | {"color": colour(), "opacity": faded(0.7)},
    }


def row_facet(field: str, sort: Sequence[str] | None = None) -> Spec:
    """Panels in rows by `field` (a model and workload, a workload), each headed by its value in bold."""
    header = {"labelAngle": 0, "labelAlign": "left", "labelOrient": "top", "labelFontWeight": "bold"}
    found: Spec = {"field": field, "type": "nominal", "title": None, "header": header}
    return found if sort is None else found | {"sort": list(sort)}


def quantitative(field: str, title: str | None, **more: Any) -> Spec:
    return {"field": field, "type": "quantitative", "title": title, "axis": {"format": NUMBER}} | more


def top(description: str, datasets: Mapping[str, list[Record]], **body: Any) -> Spec:
    """A whole spec: the schema, what it shows (its description: the SVG's aria label), its data by name,
    the page's font sizes and `body`."""
    return {
        "$schema": SCHEMA,
        "description": description,
        "datasets": dict(datasets),
        "config": {
            "font": "system-ui, sans-serif",
            "axis": {"labelFontSize": 10, "titleFontSize": 11, "labelOverlap": True, "titleLimit": 2 * WIDTH},
            "legend": {"labelFontSize": 10, "titleFontSize": 11, "titleLimit": 2 * WIDTH},
            "header": {"labelFontSize": 11, "titleFontSize": 11},
            "view": {"stroke": "#ccc"},
        },
    } | body
