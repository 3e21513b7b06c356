"""The report as one self-contained HTML file: tables, interactive charts (their library inline), inline CSS,
no external link.

It opens offline from the lake, a laptop or the Airflow "Benchmarks" view alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from accelbench.report.capacity_planner import planner_context
from accelbench.report.charts import chart_html, page_script
from accelbench.report.columns import label
from accelbench.report.pages import environment
from accelbench.report.records import Record, figure
from accelbench.report.table import Table
from accelbench.report.tables import TABLES
from accelbench.report.tables import points as points_table
from accelbench.report.tables import retracted as retracted_table

# A section: its heading, its one visible line, what it says behind a disclosure, then its table (or the
# body it shows instead).
_HEADING = """{% from "table.html.j2" import table %}
<h{{ section.level }} id="{{ anchor }}">{{ section.heading }}</h{{ section.level }}>
"""
_METHOD = """<details class="method"><summary>How this is computed</summary>
{}
</details>
"""
_ONE_TABLE = "{{ table(section.table_id, rows, columns, scroll=section.scroll, csv=csv) }}"
_FRACTIONS: tuple[str, ...] = ("_change", "_change_low", "_change_high", "_cv", "error_rate")
_FRACTIONS += ("top1_agreement", "accuracy", "accuracy_low", "accuracy_high")
_FRACTIONS += ("accuracy_ratio", "accuracy_ratio_low", "accuracy_ratio_high")
# What the small line under a figure is: said in full once (`{{ intervals }}`, the headline's section, with
# the anchor #intervals), in one sentence by every other section with figures (`{{ intervals_short }}`). The
# methods are accelbench.report.points's, the verdicts accelbench.report.slos's.
INTERVALS = """<span id="intervals">Under each figure, its 95% interval: for throughputs (and the
costs per 1M tokens, from them) a Student t interval over the repeats around their mean; for a latency
percentile, over two or more repeats a t interval over the logs of the repeats' percentiles around their
geometric mean, from one repeat a distribution-free interval from its requests' order statistics
(≥: no upper bound from so few requests); for the error rate, the exact binomial (Clopper-Pearson)
interval over all requests. No line: one repeat without request samples, no interval. A level meets an
SLO only when the whole interval is within it; one whose interval holds the limit is <em>undecided</em>,
never ranked as meeting.</span>"""
INTERVALS_SHORT = 'Under each figure, its 95% interval (<a href="#intervals">how each is made</a>).'


def _cell(value: Any, column: str = "") -> str:
    """Blank for missing values (never 0 or 'None'); fractions as percentages; sensible precision."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if column.endswith(_FRACTIONS) and isinstance(value, int | float):
        if column.endswith(("_change", "_change_low", "_change_high")):
            return f"{value:+.1%}"
        return f"{value:.2%}" if column.endswith("error_rate") and 0 < value < 0.01 else f"{value:.1%}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{value:.0f}"
        return f"{value:.4g}" if abs(value) < 1 else f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return str(value)


def _bound(value: float, column: str) -> str:
    """A bound, shorter than the figure (three significant digits): the interval must not widen a column."""
    if column.endswith(_FRACTIONS):
        return _cell(value, column)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) >= 0.01 or value == 0 else f"{value:.2g}"


def _known(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _bounds(row: Record, column: str) -> str:
    """The 95% interval of `column` in `row` (`<column>_low`, `<column>_high`) as the page shows it under
    the figure: "180\u2013390" (an en dash), "≥ 180" or "≤ 390" where one side is unbounded; "" without
    an interval."""
    found = figure(row, column)
    low, high = _known(found.low), _known(found.high)
    if low is not None and high is not None:
        return f"{_bound(low, column)}\u2013{_bound(high, column)}"
    if high is not None:
        return f"≤ {_bound(high, column)}"
    return "" if low is None else f"≥ {_bound(low, column)}"


def _cell_class(value: Any, column: str) -> str:
    if column.endswith("_verdict") and value in ("regression", "improvement"):
        return str(value)
    if column == "slo_verdict" and value in ("undecided", "misses"):
        return f"text {value}"
    if column == "sample_warning" and value:
        return "text warn"
    if column == "host" and value and value != "instance":
        return "text local"
    if column == "measured_where" and str(value).startswith("local"):
        return "text local"
    return "" if isinstance(value, int | float) and not isinstance(value, bool) else "text"


def _code(text: str) -> Markup:
    """`a` spans of a plain-text hint as <code> elements, the rest escaped."""
    parts = str(text).split("`")
    shown = (Markup("<code>%s</code>") % p if i % 2 else Markup.escape(p) for i, p in enumerate(parts))
    return Markup("").join(shown)


def _environment() -> Environment:
    env = environment().overlay()
    env.filters |= {"cell": _cell, "cell_class": _cell_class, "label": label, "bounds": _bounds}
    env.filters["markdown_code"] = _code
    env.globals |= {"intervals": Markup(INTERVALS), "intervals_short": Markup(INTERVALS_SHORT)}
    return env


def _section(env: Environment, t: Table, rows: list[Record], slos: Any) -> Markup:
    """The table's section of the page; empty (not drawn) when the table has no rows."""
    section = t.section
    if not rows:
        return Markup("")
    lead = f'<p class="lead">{section.lead}</p>\n' if section.lead else ""
    method = _METHOD.format(section.text) if section.text.strip() else ""
    source = f"{_HEADING}{lead}{method}{section.body or _ONE_TABLE}"
    variables = {"rows": rows, "columns": t.columns, "section": section, "anchor": t.anchor, "slos": slos}
    variables["csv"] = t.csv
    return Markup(env.from_string(source).render(variables | dict(section.variables(rows))))


def render_html(
    rid: str,
    tables: dict[str, list[Record]],
    report_filter: Any,
    runs_read: int,
    generated_at: datetime,
    *,
    registry: Sequence[Table] = TABLES,
) -> str:
    """`report_filter` is a ReportFilter (dataclass): its fields are listed at the top of the page.
    The sections come in the registry's order (`accelbench.report.tables`)."""
    shown_filters = []
    for f in fields(report_filter):
        value = getattr(report_filter, f.name)
        if isinstance(value, list):
            value = ", ".join(value) or "all"
        shown_filters.append((label(f.name), "none" if value is None else value))
    plots = chart_html(tables, report_filter)  # (id, title, HTML or None) per chart
    env = _environment()
    slos = report_filter.slos
    sections = [(t, _section(env, t, tables.get(t.name) or [], slos)) for t in registry]
    unmeasured = [
        (t.section.heading.split(":")[0], t.section.unmeasured)
        for t in registry
        if t.section.unmeasured and not tables.get(t.name)
    ]
    return env.get_template("report.html.j2").render(
        report_id=rid,
        generated_at=f"{generated_at:%Y-%m-%d %H:%M:%S %Z}",
        filters=shown_filters,
        counts={"runs_read": runs_read, "runs_retracted": len(tables.get(retracted_table.TABLE.name) or [])},
        sections=sections,
        unmeasured=unmeasured,
        slos=slos,
        planner=planner_context(tables[points_table.TABLE.name], **asdict(slos)),
        plots=plots,
        chart_script=page_script() if any(html for _id, _title, html in plots) else "",
    )
