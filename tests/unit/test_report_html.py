"""The HTML report on its own: self-contained, escaped, blank where a value does not apply, stable."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser

from accelbench.report.build import ReportFilter, build_report
from accelbench.report.html import render_html
from accelbench.report.retractions import Retraction

from tests.support.report_data import PRICES, RUNS

WHEN = datetime(2026, 11, 30, 12, tzinfo=UTC)
HOSTILE = '<script>alert("x")</script>'


class _Cells(HTMLParser):
    """Rows of one table by id: a list of {heading: cell text}."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.inside, self.heads, self.rows, self.cell = table_id, False, [], [], None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.inside = dict(attrs).get("id") == self.table_id
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.cell = ""

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False
        elif self.inside and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None

    def records(self) -> list[dict[str, str]]:
        head, *body = self.rows
        return [dict(zip(head, row, strict=True)) for row in body]


def _render(runs=RUNS, retracted=()):
    runs = [r | {"run_id": f"r{i}", "date": "2026-11-10"} for i, r in enumerate(runs)]
    flt = ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50)
    return render_html(
        "20261130T120000Z", build_report(runs, PRICES, list(retracted), flt), flt, len(runs), WHEN
    )


def _table(html: str, table_id: str) -> list[dict[str, str]]:
    parser = _Cells(table_id)
    parser.feed(html)
    return parser.records()


def test_best_table_shows_costs_and_leaves_per_accelerator_blank_for_cpu() -> None:
    html = _render()
    best = {r["Configuration"].split(" · ")[0]: r for r in _table(html, "best-table")}
    assert list(best) == ["g6e.xlarge", "m8g.xlarge", "r8g.large"]  # cheapest first
    # m8g.xlarge c2: 200 tokens/s at 0.18 USD/h (the price in force on 2026-11-10) -> 0.25 USD per 1M
    assert best["m8g.xlarge"]["On-demand USD / 1M output tokens"] == "0.25"
    assert best["m8g.xlarge"]["Sample-size warning"].startswith("p99 from 200 requests")
    assert best["g6e.xlarge"]["Spot USD / 1M output tokens"] == ""  # no spot price: blank, not 0
    assert (
        best["m8g.xlarge"]["Model"] == "model"
        and best["m8g.xlarge"]["Workload (dataset input→output tokens)"]
    )
    points = _table(html, "points-table")
    per_accel = "Output tokens per s per accelerator (blank on CPU)"
    by_type = {r["Configuration"].split(" · ")[0]: r[per_accel] for r in points}
    assert by_type["g6e.xlarge"] == "3600" and by_type["m8g.xlarge"] == "" and by_type["r8g.large"] == ""


def test_page_is_self_contained_escaped_and_stable() -> None:
    runs = [r | {"model": HOSTILE} if r["instance_type"] == "r8g.large" else r for r in RUNS]
    html = _render(runs)
    assert HOSTILE not in html and "&lt;script&gt;" in html  # tables escaped, charts' JSON too
    assert not re.search(r"""(src|href|url)\s*[=(]\s*["']?(https?:)?//""", html)
    # The only scripts are inline, nothing fetched: the capacity planner's data and code, each drawn chart's
    # spec (throughput vs latency, cost, frontier, version trend), the charts' library and what draws them,
    # and the tables' sorting and filtering.
    assert html.count('<script type="application/json" data-chart=') == 4
    assert html.count("<script") == 2 + 4 + 2 + 1 and "<script src" not in html and "<link" not in html
    assert html.count("vegaEmbed(") == 1  # the library once, however many charts
    assert _render(runs) == html  # same tables, same bytes (no timestamps, data in a fixed order)


def test_retracted_runs_have_their_own_section_and_leave_the_rest() -> None:
    html = _render(retracted=[Retraction("r6", "node was throttled", "r5")])
    assert "r8g.large" not in {r["Configuration"].split(" · ")[0] for r in _table(html, "best-table")}
    (gone,) = _table(html, "retracted-table")
    assert (gone["Run id"], gone["Retraction reason"], gone["Superseded by run"]) == (
        "r6",
        "node was throttled",
        "r5",
    )


def test_empty_report_says_so_instead_of_plotting() -> None:
    html = _render(runs=[])
    assert "data-chart=" not in html and 'id="plots"' not in html and 'id="no-answer"' in html
