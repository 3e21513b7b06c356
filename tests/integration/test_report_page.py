"""The report page as a reader meets it, in headless Chromium (Debian's): the answer cards on the first screen
at 1400x900, no horizontal page overflow at 390x844, little prose by default (the methods are behind
disclosures), no empty section drawn, and tables that sort, filter and link their CSV.

The lake has two priced tiers (CPU and GPU types measured on themselves) and a local run, for two models.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from accelbench.lake.store import Lake
from accelbench.report.build import build_report, write_report

from tests.integration.test_benchmarks_view import FILTER, PRICES, RUNS
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, artifacts_dir
from tests.support.servers import missing

MAX_WORDS_ABOVE_CARDS, MAX_WORDS = 60, 400  # issue 47's limits on visible prose

# Visible prose: paragraphs, list items and captions that are shown (not inside a closed disclosure), outside
# the cards, tables and charts; and how many words of it come before the first card.
PROSE = """() => {
  const shown = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  const prose = [...document.querySelectorAll('p, li, figcaption')]
    .filter((e) => shown(e) && !e.closest('.card, table, svg'));
  const words = (els) => els.reduce((n, e) => n + e.innerText.split(/\\s+/).filter(Boolean).length, 0);
  const first = document.querySelector('.card');
  const above = prose.filter((e) => e.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING);
  return {total: words(prose), above: words(above)};
}"""


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lake = Lake(str(tmp_path_factory.mktemp("page") / "lake"))
    runs = [r | {"run_id": f"r{i}", "date": "2026-11-10"} for i, r in enumerate(RUNS)]
    other = [r | {"run_id": f"o{i}", "model": "org/other-model"} for i, r in enumerate(runs)]
    tables = build_report(runs + other, PRICES, [], FILTER)
    written = write_report(
        lake, "20261130T120000Z", tables, FILTER, 2 * len(runs), datetime(2026, 11, 30, tzinfo=UTC)
    )
    return Path(written["report.html"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file() or shutil.which("chromium") is None:
        missing("Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


def test_the_first_screen_holds_every_card_and_little_prose(report_page: Path, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(report_page.as_uri())
    cards = page.locator(".card")
    assert cards.count() == 4  # two models x (priced on the instance, local host)
    for i in range(cards.count()):
        box = cards.nth(i).bounding_box()
        assert box is not None and box["y"] + box["height"] <= 900, (i, box)
    priced = cards.filter(has_text="per 1M output tokens").first.inner_text()
    assert "g6e.xlarge" in priced and "[" in priced and "Runner-up: m8g.xlarge" in priced
    page.screenshot(path=str(artifacts_dir() / "report-first-screen-1400.png"))
    words = page.evaluate(PROSE)
    assert words["above"] <= MAX_WORDS_ABOVE_CARDS and words["total"] <= MAX_WORDS, words
    # No empty section: every section drawn has rows; what is not measured is one line naming its field.
    assert page.get_by_text("No rows.").count() == 0
    assert "load_mode: search" in page.locator("#unmeasured").inner_text()
    # The methods are there, closed: opening one shows it.
    method = page.locator("#cards + .lead + details.method")
    assert not method.evaluate("d => d.open")
    method.locator("summary").click()
    assert "pooled two-sample t test" in method.inner_text()
    page.close()


def test_no_horizontal_page_overflow_on_a_phone(report_page: Path, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(report_page.as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(artifacts_dir() / "report-first-screen-390.png"))
    page.close()


def test_tables_sort_filter_and_link_their_csv(report_page: Path, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(report_page.as_uri())
    table = page.locator("#points-table")
    column = [c.get_attribute("title") for c in table.locator("thead th").all()].index("output_throughput")

    def throughputs() -> list[float]:
        cells = table.locator(f"tbody tr:visible td:nth-child({column + 1})").all()
        return [float(c.evaluate("td => td.firstChild.nodeValue").replace(",", "")) for c in cells]

    table.locator("thead th").nth(column).click()
    assert throughputs() == sorted(throughputs())
    table.locator("thead th").nth(column).click()
    assert throughputs() == sorted(throughputs(), reverse=True)
    rows = table.locator("tbody tr:visible").count()
    page.get_by_label("Filter the rows of points-table").fill("g6e.xlarge")
    shown = table.locator("tbody tr:visible")
    assert 0 < shown.count() < rows and all("g6e.xlarge" in r.inner_text() for r in shown.all())
    hrefs = {a.get_attribute("href") for a in page.get_by_role("link", name="Download CSV").all()}
    assert "points.csv" in hrefs and (report_page.parent / "points.csv").is_file()
    svg = page.locator("#plot-throughput_vs_latency a.file-link").get_attribute("href")
    assert svg == "figures/throughput_vs_latency.svg" and (report_page.parent / svg).is_file()
    page.close()


def test_a_local_lake_says_in_one_line_why_nothing_is_priced(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    lake = Lake(str(tmp_path_factory.mktemp("local") / "lake"))
    local = [r | {"run_id": f"l{i}"} for i, r in enumerate(RUNS) if r.get("execution_mode") == "local"]
    tables = build_report(local, PRICES, [], FILTER)
    written = write_report(
        lake, "20261130T120000Z", tables, FILTER, len(local), datetime(2026, 11, 30, tzinfo=UTC)
    )
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(Path(written["report.html"]).as_uri())
    assert "execution_mode: kubernetes" in page.locator("#cards ~ p.lead").last.inner_text()
    assert page.locator(".card").count() == 1 and "not priced" in page.locator(".card").inner_text()
    words = page.evaluate(PROSE)
    assert words["above"] <= MAX_WORDS_ABOVE_CARDS and words["total"] <= MAX_WORDS, words
    page.close()
