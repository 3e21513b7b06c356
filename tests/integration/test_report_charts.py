"""The report's charts in Chromium: drawn from the page alone (no network), no two texts of a chart overlap
at 1400x900 or at 390x844, hovering a point shows its value and interval, and the trends view over three
campaigns of one configuration draws three points per series with bands.

The lake is written from rows (two priced tiers, a local run, three campaigns of m8g.xlarge whose third
runs a new vLLM version at a new price): no vLLM runs here.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from accelbench.core.price import Price
from accelbench.lake.store import Lake
from accelbench.report.build import FIGURES, HTML_NAME, ReportFilter, build_report, write_report
from accelbench.report.charts import CHARTS

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, artifacts_dir
from tests.support.report_data import JULY, run_row
from tests.support.servers import missing

REPORT_ID = "20261201T120000Z"
LOCAL = {
    "execution_mode": "local",
    "measured_on_instance": False,
    "host_architecture": "x86_64",
    "host_cpu_model": "Intel Core i7-1365U",
    "host_vcpus": 12,
}
CAMPAIGNS = (  # (id, day of November 2026, vLLM version, throughput factor)
    ("c1", 10, "0.32.0", 1.0),
    ("c2", 17, "0.32.0", 1.05),
    ("c3", 24, "0.33.0", 1.2),
)
PRICES = [
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.18, JULY, "snapshot"),
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.20, datetime(2026, 11, 20, tzinfo=UTC), "api"),
    Price("m8g.xlarge", "us-east-1", "spot", 0.07, JULY, "spot history"),
    Price("g6e.xlarge", "us-east-1", "on_demand", 1.861, JULY, "snapshot"),
    Price("c8g.xlarge", "us-east-1", "on_demand", 0.16, JULY, "snapshot"),  # never the laptop's
]
VIEWPORTS = ((1400, 900), (390, 844))


def _runs() -> list[dict]:
    """Three repeats per level (throughput ±1/16, latencies ±3%): every figure has an interval."""
    rows = []

    def level(instance, tier, c, out, ttft, tpot, campaign="c1", day=10, version="0.32.0", **kw):
        for repeat, (t, lat) in enumerate(((1 - 1 / 16, 0.97), (1.0, 1.0), (1 + 1 / 16, 1.03))):
            rows.append(
                run_row(instance, tier, c, repeat, out * t, out * t * 1.3, ttft * lat, tpot * lat, **kw)
                | {
                    "campaign_id": campaign,
                    "vllm_version": version,
                    "started_at": datetime(2026, 11, day, 8, repeat, tzinfo=UTC),
                    "date": f"2026-11-{day:02d}",
                }
            )

    for campaign, day, version, f in CAMPAIGNS:
        for c, out, ttft, tpot in ((1, 100, 150, 20), (4, 300, 600, 30), (16, 420, 2600, 45)):
            level("m8g.xlarge", "cpu", c, out * f, ttft / f, tpot / f, campaign, day, version)
    level("g6e.xlarge", "gpu", 16, 3600, 300, 15, completed=1200)
    level("g6e.xlarge", "gpu", 64, 9000, 900, 25, completed=1200)
    level("c8g.xlarge", "cpu", 4, 250, 400, 25, **LOCAL)
    return [r | {"run_id": f"r{i}"} for i, r in enumerate(rows)]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lake")
    flt = ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50)
    runs = _runs()
    tables = build_report(runs, PRICES, [], flt)
    written = write_report(
        Lake(str(root)), REPORT_ID, tables, flt, len(runs), datetime(2026, 12, 1, tzinfo=UTC)
    )
    for name in ("throughput_vs_latency", "cost_at_slo", "frontier", "version_trend", "trends"):
        svg = Path(written[f"{FIGURES}/{name}.svg"])
        assert svg.read_text().startswith("<svg"), name  # the static figure beside the page
    return Path(written[HTML_NAME])


def _browser(pw):
    if not Path(CHROMIUM).is_file() or shutil.which("chromium") is None:
        missing("Debian's chromium (apt-get install chromium)")
    return pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def _open(browser, page_file: Path, width: int, height: int):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.route("**/*", lambda r: r.abort() if not r.request.url.startswith("file:") else r.continue_())
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_file.as_uri())
    drawn = [cid for cid in CHARTS if page.locator(f"#chart-{cid}").count()]
    for cid in drawn:
        page.locator(f'#chart-{cid}[data-drawn="yes"] svg').first.wait_for(timeout=20_000)
    assert not errors, errors
    return page, drawn


# Each chart's text boxes that overlap another's by more than a pixel each way (rotated texts: their box).
_OVERLAPS = """box => {
  const texts = [...box.querySelectorAll('svg text')].filter(t => t.textContent.trim() &&
      getComputedStyle(t).visibility !== 'hidden' && Number(getComputedStyle(t).opacity) > 0);
  const rects = texts.map(t => [t.textContent, t.getBoundingClientRect()])
      .filter(([, r]) => r.width && r.height);
  const found = [];
  for (let i = 0; i < rects.length; i++) for (let j = i + 1; j < rects.length; j++) {
    const [a, p] = rects[i], [b, q] = rects[j];
    const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
    const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
    if (w > 1 && h > 1) found.push(`${a} / ${b}`);
  }
  return {count: rects.length, found};
}"""


def test_no_two_texts_of_a_chart_overlap_at_desktop_and_phone_widths(report: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = _browser(pw)
        try:
            for width, height in VIEWPORTS:
                page, drawn = _open(browser, report, width, height)
                assert {"throughput_vs_latency", "cost_at_slo", "frontier", "version_trend", "trends"} <= set(
                    drawn
                )
                for cid in drawn:
                    found = page.locator(f"#chart-{cid}").evaluate(_OVERLAPS)
                    assert found["count"] > 5 and not found["found"], (width, cid, found["found"])
                for cid in drawn:  # a chart wider than the screen scrolls in its own box, not the page
                    right = page.locator(f"#chart-{cid}").evaluate("b => b.getBoundingClientRect().right")
                    assert right <= width, (width, cid, right)
                page.locator("#plot-throughput_vs_latency").scroll_into_view_if_needed()
                page.screenshot(path=str(artifacts_dir() / f"report-charts-{width}.png"))
                page.close()
        finally:
            browser.close()


def test_hovering_a_point_shows_its_value_and_interval(report: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page, _ = _open(browser, report, 1400, 900)
            chart = page.locator("#chart-throughput_vs_latency")
            chart.scroll_into_view_if_needed()
            point = chart.locator('path[aria-roledescription="point"]').first
            point.hover()
            tooltip = page.locator("#vg-tooltip-element")
            tooltip.wait_for(state="visible", timeout=5_000)
            text = tooltip.inner_text()
            assert "configuration" in text and "tokens/s (95% interval " in text, text
            assert " ms (95% interval " in text, text  # the latency's value and its interval
        finally:
            browser.close()


def test_the_trends_view_draws_three_campaigns_per_series_with_bands(report: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page, _ = _open(browser, report, 1400, 900)
            chart = page.locator("#chart-trends")
            labels = chart.locator('path[aria-roledescription="point"]').evaluate_all(
                "ps => ps.map(p => p.getAttribute('aria-label'))"
            )
            # One series (m8g.xlarge less its version) in three panels (cost, p99 TTFT, p99 TPOT): 3 x 3.
            assert len(labels) == 9, labels
            assert sum("2026-11-24" in label or "Nov 24, 2026" in label for label in labels) == 3, labels
            bands = chart.locator('path[aria-roledescription="area mark"]')
            assert bands.count() == 3  # a band per panel
            assert all(b.get_attribute("d") for b in bands.all())
        finally:
            browser.close()
