"""Cost against quality: per model and workload (one panel each), every configuration of a quantization
matrix, its USD per 1M output tokens (on-demand, best level under the SLOs) against its accuracy as a
share of the reference's, both with 95% intervals; the Pareto front joined by a grey line; configurations
that fail or are undecided on the quality gate hollow; the gate's accuracy limit a dashed line. Explorable:
filters by tier, instance family, model, quantization and vLLM version."""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.quality.quality_gate import GATE_ACCURACY_RATIO
from accelbench.report.charts.spec import (
    HEIGHT,
    SLO_COLOUR,
    WIDTH,
    SloLimits,
    Spec,
    bar,
    colour,
    error_bar,
    faded,
    filter_fields,
    filters,
    legend_toggle,
    quantitative,
    row_facet,
    top,
    with_interval,
)
from accelbench.report.records import Record
from accelbench.report.tables import quality as quality_table


def _name(r: Record) -> str:
    """The series name the other charts give the configuration: `<configuration> · <its short model>`."""
    own = str(r.get("model") or r.get("model_short") or "?").rsplit("/", 1)[-1]
    local = str(r.get("measured_where") or "").startswith("local")
    return f"{r['configuration']} · {own}" + (" (local host)" if local else "")


def cost_vs_quality(rows: Sequence[Record], slos: SloLimits) -> Spec | None:
    """The cost-quality chart as a Vega-Lite spec; None when no configuration has both a price and an
    accuracy ratio."""
    cost = quality_table.COST
    known = [r for r in rows if r.get(cost) is not None and r.get("accuracy_ratio") is not None]
    if not known:
        return None
    data = []
    for r in sorted(known, key=lambda r: (str(r.get("quality_reference")), r["workload"], r[cost])):
        x_low, x_high = bar(r, cost)
        y_low, y_high = bar(r, "accuracy_ratio")
        data.append(
            {
                "series": _name(r),
                "group": f"{str(r.get('quality_reference')).split('/')[-1]} · {r['workload']}",
                "x": r[cost],
                "x_low": x_low,
                "x_high": x_high,
                "y": r["accuracy_ratio"],
                "y_low": y_low,
                "y_high": y_high,
                "gate": r.get("quality_gate") or "?",
                "front": bool(r.get("on_pareto_front")),
                "cost_text": with_interval(r, cost, " USD"),
                "ratio_text": with_interval(r, "accuracy_ratio"),
                "gate_limit": GATE_ACCURACY_RATIO,
            }
            | filter_fields(r)
        )
    params, kept = filters(data)
    x = quantitative(
        "x", "USD per 1M output tokens (on-demand, best level under the SLOs)", scale={"zero": True}
    )
    y = quantitative("y", "accuracy, share of the reference's", scale={"zero": False})
    tooltip = [
        {"field": "series", "title": "configuration"},
        {"field": "cost_text", "title": "USD per 1M output tokens"},
        {"field": "ratio_text", "title": "accuracy ratio"},
        {"field": "gate", "title": "quality gate"},
        {"field": "front", "title": "on the Pareto front"},
    ]
    layers: list[Spec] = [
        {
            "transform": [{"filter": "datum.front"}],
            "mark": {"type": "line", "color": "#666", "strokeWidth": 1},
            "encoding": {"x": x, "y": y, "order": {"field": "x", "type": "quantitative"}},
        },
        {
            "mark": {"type": "rule", "color": SLO_COLOUR, "strokeDash": [5, 3]},
            "encoding": {"y": y | {"field": "gate_limit", "aggregate": "max"}},
        },
        error_bar(x, y, "y_low", "y_high"),
        error_bar(x, y, "x_low", "x_high", along="x"),
        {
            "params": [legend_toggle()],
            "mark": {"type": "point", "size": 60, "strokeWidth": 2},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour(),
                "fill": {
                    "condition": {
                        "test": "datum.gate === 'pass'",
                        "field": "series",
                        "type": "nominal",
                        "legend": None,
                    },
                    "value": "white",
                },
                "opacity": faded(),
                "tooltip": tooltip,
            },
        },
    ]
    return top(
        "Cost per 1M output tokens against accuracy as a share of the reference's, per model and workload; "
        "the line joins the Pareto front; hollow: the quality gate failed or is undecided; dashed: the "
        "gate's limit",
        {"quality": data},
        data={"name": "quality"},
        params=params,
        transform=kept,
        facet={"row": row_facet("group")},
        spec={"width": 2 * WIDTH, "height": HEIGHT, "layer": layers},
        resolve={"scale": {"x": "independent", "y": "independent"}},
    )
