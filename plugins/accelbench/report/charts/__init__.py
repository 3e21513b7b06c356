"""The report's charts: interactive Vega-Lite in the page, static SVG beside it.

Each chart is a function `fn(rows, slos) -> Spec | None` of one table's rows (None: nothing to draw) in
`CHARTS`, in the page's order. The page calls two things: `chart_html(tables, slos)`, each chart's HTML (a
box and its spec, as JSON) for its section, and `page_script()`, the library and the code that draws the
boxes, once at the end of the page. `write_report` writes `chart_svgs(tables, slos)` as
figures/<id>.svg beside the page, for documents.

Why Vega-Lite (through vl-convert-python, no altair): a chart is a JSON document, so the same tables give
the same bytes and the tests read what is plotted from the spec's data; hover, legend toggles and filter
dropdowns are declared, not coded; vl-convert bundles the Vega JavaScript (0.9 MB, once per page, no CDN)
and draws the same specs as static SVG without a browser. plotly.min.js alone is 4.5 MB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

from accelbench.report.charts.bundle import page_script, spec_json, static_svg
from accelbench.report.charts.cost import cost_at_slo, frontier
from accelbench.report.charts.latency import throughput_vs_latency
from accelbench.report.charts.palette import paint
from accelbench.report.charts.quality import cost_vs_quality
from accelbench.report.charts.spec import SloLimits, Spec
from accelbench.report.charts.trends import trends
from accelbench.report.charts.versions import version_trend
from accelbench.report.records import Record
from accelbench.report.table import Table
from accelbench.report.tables import best_under_slo as best_table
from accelbench.report.tables import frontier as frontier_table
from accelbench.report.tables import points as points_table
from accelbench.report.tables import quality as quality_table
from accelbench.report.tables import trends as trends_table

ChartFn = Callable[[Sequence[Record], SloLimits], Spec | None]
Tables = Mapping[str, list[Record]]


def _rows(t: Table) -> Callable[[Tables], list[Record]]:
    return lambda tables: tables.get(t.name) or []


def _best_on_frontier(tables: Tables) -> list[Record]:
    """The best points, each with `on_frontier`: whether the frontier table holds it."""
    front = {r["point_id"] for r in tables.get(frontier_table.TABLE.name) or []}
    return [r | {"on_frontier": r["point_id"] in front} for r in tables.get(best_table.TABLE.name) or []]


def _quality_with_tiers(tables: Tables) -> list[Record]:
    """The quality rows with their points' tier and vLLM version (the filters'), by configuration id."""
    config = {r["configuration_id"]: r for r in tables.get(points_table.TABLE.name) or []}
    out = []
    for r in tables.get(quality_table.TABLE.name) or []:
        p = config.get(r["configuration_id"], {})
        out.append(r | {k: p.get(k) for k in ("accelerator_type", "vllm_version")})
    return out


@dataclass(frozen=True)
class Chart:
    """A chart: its title on the page, its spec from rows (`fn(rows, slos)`), and the rows it draws."""

    title: str
    build: ChartFn
    rows: Callable[[Tables], list[Record]]


CHARTS: dict[str, Chart] = {  # id (the figure's id on the page, plot-<id>; its SVG file): the chart
    "throughput_vs_latency": Chart("Throughput vs latency", throughput_vs_latency, _rows(points_table.TABLE)),
    "cost_at_slo": Chart("Cost per 1M output tokens at the SLO", cost_at_slo, _rows(best_table.TABLE)),
    "frontier": Chart("Price-performance: cost against latency", frontier, _best_on_frontier),
    "version_trend": Chart("Version trend", version_trend, _rows(best_table.TABLE)),
    "cost_vs_quality": Chart("Cost vs quality against the reference", cost_vs_quality, _quality_with_tiers),
    "trends": Chart("Trends across campaigns", trends, _rows(trends_table.TABLE)),
}


def chart_specs(tables: Tables, slos: SloLimits) -> dict[str, Spec | None]:
    """Every chart's spec (None: nothing to draw), in the page's colours (`palette.paint`)."""
    specs = {cid: chart.build(chart.rows(tables), slos) for cid, chart in CHARTS.items()}
    paint(specs.values())
    return specs


def _box(cid: str, spec: Spec) -> Markup:
    """A chart's box (scrolls sideways on a narrow screen) and its spec, which `page_script` draws."""
    return Markup(
        f'<div class="chart" id="chart-{cid}" style="overflow-x:auto;max-width:100%" role="img" '
        f'aria-label="{escape(str(spec.get("description", "")))}"></div>\n'
        f'<script type="application/json" data-chart="chart-{cid}">{spec_json(spec)}</script>'
    )


def chart_html(tables: Tables, slos: SloLimits) -> list[tuple[str, str, Markup | None]]:
    """(id, title, HTML or None when there is nothing to draw) per chart, in the page's order."""
    specs = chart_specs(tables, slos)
    return [(cid, chart.title, _box(cid, s) if (s := specs[cid]) else None) for cid, chart in CHARTS.items()]


def chart_svgs(tables: Tables, slos: SloLimits) -> dict[str, str]:
    """Each drawn chart as static SVG, by id: what figures/<id>.svg beside the page holds."""
    return {cid: static_svg(spec) for cid, spec in chart_specs(tables, slos).items() if spec is not None}


__all__ = ["CHARTS", "Chart", "chart_html", "chart_specs", "chart_svgs", "page_script"]
