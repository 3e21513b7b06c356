"""The report's tables, one module each, in the order a reader meets them on the page.

`TABLES` is the one list of them: `build_report` computes each from the shared `Inputs`, `write_report`
writes each one's Parquet and CSV file and counts its rows in summary.json, `render_html` shows each
one's columns in its section of the page, in this order, and the Benchmarks view serves and lists their
files. No other place names a table.

To add a table, write one module here that defines `TABLE = Table(...)` (`accelbench.report.table`):
its `name` (the files' stem and the key of its rows), `compute` (a function of `Inputs`, whose points are
typed, `accelbench.report.model`, to rows of one frozen dataclass, its `row`: an `Interval` field is
written as three columns, `accelbench.report.records`), the HTML `columns` (columns of the row type that
`accelbench.report.columns.label` knows, or new entries there), and its `Section` of the page (heading,
anchor, what it says, the HTML table's id); then put
`<module>.TABLE` into `TABLES` where its section goes on the page. The tests in
tests/unit/test_report_tables.py hold every table to the rules above.
"""

from __future__ import annotations

from accelbench.report.table import Table
from accelbench.report.tables import (
    ab_comparisons,
    best_under_slo,
    capacities,
    cards,
    costs,
    cross_tier,
    decisions,
    frontier,
    headline,
    headroom,
    local_results,
    models,
    points,
    prefix_caching,
    quality,
    resolution,
    retracted,
    traces,
    trends,
    version_deltas,
)

TABLES: tuple[Table, ...] = (
    cards.TABLE,
    headline.TABLE,
    cross_tier.TABLE,
    cross_tier.NOT_COMPARED,
    best_under_slo.TABLE,
    local_results.TABLE,
    quality.TABLE,
    capacities.TABLE,  # followed on the page by the capacity planner and the plots
    headroom.TABLE,
    frontier.TABLE,
    version_deltas.TABLE,
    ab_comparisons.TABLE,
    trends.TABLE,
    decisions.TABLE,
    prefix_caching.TABLE,
    traces.TABLE,
    resolution.TABLE,
    models.TABLE,
    costs.CAMPAIGNS,
    costs.SERVERS,
    points.TABLE,
    retracted.TABLE,
)
