"""The "Benchmarks" view in a real Airflow API server, opened in headless Chromium (Debian's).

The API server runs as its own process on 127.0.0.1 with the simple auth manager and one user; the
test checks that the view refuses anonymous requests, then logs the browser in with a real token,
opens the view from the UI's navigation, and checks the report's tables, plots and capacity planner
rendered, at 1400 px wide without horizontal scrolling. Screenshots are kept under test-artifacts/
(or $ACCELBENCH_TEST_ARTIFACTS).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from accelbench.core.price import Price
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report, write_report
from accelbench.report.capacity_planner import plan_capacity
from accelbench.report.retractions import Retraction

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, artifacts_dir
from tests.support.report_data import JULY, run_row
from tests.support.servers import free_port, missing

pytestmark = pytest.mark.airflow
REPORT_ID = "20261130T120000Z"
WIDTH = 1400
LAPTOP = {
    "execution_mode": "local",
    "measured_on_instance": False,
    "host_architecture": "x86_64",
    "host_cpu_model": "Intel Core i7-1365U",
    "host_vcpus": 12,
}


# Three repeats of a level, as a campaign measures them: throughput 1/16 either side of the level's (exact
# in binary, so the mean the report shows is the level's own and the hand computations below hold),
# latencies 3% either side: every figure gets a 95% interval the page shows under it.
SPREAD = ((1 - 1 / 16, 0.97), (1.0, 1.0), (1 + 1 / 16, 1.03))


def _level(
    instance: str,
    tier: str,
    level: int,
    rps: float,
    ttft: float,
    tpot: float,
    spread: tuple[tuple[float, float], ...] = SPREAD,
    **kw,
):
    """Three repeats of one level serving `rps` requests/s of 32 output tokens each."""
    return [
        run_row(
            instance,
            tier,
            level,
            repeat,
            rps * rate * 32,
            rps * rate * 160,
            ttft * slower,
            tpot * slower,
            request_throughput=rps * rate,
            p99_e2el_ms=(ttft + 31 * tpot) * slower,
            **kw,
        )
        for repeat, (rate, slower) in enumerate(spread)
    ]


# Made so that the planner's ranking turns over when the TPOT SLO tightens from 50 to 30 ms.
LEVELS = [
    _level("m8g.xlarge", "cpu", 1, 1.0, 100, 20),
    _level("m8g.xlarge", "cpu", 2, 2.5, 500, 35),
    _level("m8g.xlarge", "cpu", 4, 3.0, 2500, 40),  # the most req/s, beyond the 2000 ms TTFT SLO
    # p99 TTFT 1800 ms [1034, 3133]: undecided against 2000 ms, never used; the page says what decides it
    _level("m8g.xlarge", "cpu", 3, 2.8, 1800, 38, ((1 - 1 / 16, 0.8), (1.0, 1.0), (1 + 1 / 16, 1.25))),
    _level("m8g.xlarge", "cpu", 1, 0.8, 150, 22, vllm_version="0.31.0"),
    _level("m8g.xlarge", "cpu", 2, 2.0, 600, 45, vllm_version="0.31.0"),
    _level("g6e.xlarge", "gpu", 16, 36.0, 300, 15, completed=1200),
    _level("g6e.xlarge", "gpu", 32, 60.0, 900, 25, completed=950, failed=50),  # 5% errors > 1%
    _level("r8g.large", "cpu", 1, 0.5, 90, 10),  # retracted below
    _level("c8g.xlarge", "cpu", 4, 9.0, 200, 20, **LAPTOP),  # cheapest-looking, but not on a c8g.xlarge
    _level("c7g.xlarge", "cpu", 8, 4.0, 2600, 30),  # beyond the TTFT SLO at its only level
    _level("c8g.2xlarge", "cpu", 4, 5.0, 400, 25),  # no price in the catalog
]
RUNS = [run for level in LEVELS for run in level]
PRICES = [
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.20, JULY, "snapshot"),
    Price("m8g.xlarge", "us-east-1", "spot", 0.07, JULY, "spot history"),
    Price("g6e.xlarge", "us-east-1", "on_demand", 1.861, JULY, "snapshot"),
    Price("r8g.large", "us-east-1", "on_demand", 0.05, JULY, "snapshot"),
    Price("c8g.xlarge", "us-east-1", "on_demand", 0.16, JULY, "snapshot"),  # must not apply to the laptop
    Price("c7g.xlarge", "us-east-1", "on_demand", 0.145, JULY, "snapshot"),
]
FILTER = ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50, max_error_rate=0.01)


@pytest.fixture(scope="module")
def api_server(
    airflow_db: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, dict[str, list[dict[str, Any]]]]]:
    """(base URL, lake, report tables) of an API server with one report in its lake and the user alice."""
    home = tmp_path_factory.mktemp("view")
    lake = Lake(str(home / "lake"))
    runs = [r | {"run_id": f"r{i}", "date": "2026-11-10"} for i, r in enumerate(RUNS)]
    retracted = [Retraction(r["run_id"], "bad node", None) for r in runs if r["instance_type"] == "r8g.large"]
    tables = build_report(runs, PRICES, retracted, FILTER)
    write_report(lake, REPORT_ID, tables, FILTER, len(runs), datetime(2026, 11, 30, 12, tzinfo=UTC))
    (home / "passwords.json").write_text(json.dumps({"alice": "wonderland"}))
    port = free_port()
    env = os.environ | {
        "ACCELBENCH_HOME": str(home),
        "ACCELBENCH_LAKE_URI": lake.uri,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "alice:viewer",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__API_AUTH__JWT_SECRET": "x" * 64,
    }
    log = (home / "api-server.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "airflow",
            "api-server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-w",
            "1",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/api/v2/monitor/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"API server did not start: {(home / 'api-server.log').read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield base, home / "lake", tables
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _token(base: str) -> str:
    resp = httpx.post(f"{base}/auth/token", json={"username": "alice", "password": "wonderland"}, timeout=10)
    resp.raise_for_status()
    return resp.json()["access_token"]


def test_view_needs_an_airflow_user_and_serves_only_report_files(api_server) -> None:
    base, _, _ = api_server
    assert httpx.get(f"{base}/accelbench/", timeout=10).status_code == 401
    headers = {"Authorization": f"Bearer {_token(base)}"}
    index = httpx.get(f"{base}/accelbench/", headers=headers, timeout=30)
    assert index.status_code == 200 and REPORT_ID in index.text
    csv = httpx.get(f"{base}/accelbench/reports/{REPORT_ID}/best_under_slo.csv", headers=headers, timeout=10)
    assert csv.status_code == 200 and csv.text.startswith('"Tier","Instance type"')
    svg = httpx.get(
        f"{base}/accelbench/reports/{REPORT_ID}/figures/cost_at_slo.svg", headers=headers, timeout=10
    )
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml" and "<svg" in svg.text
    for bad in (
        f"reports/{REPORT_ID}/figures/nothing.svg",  # not a chart of the report
        f"reports/{REPORT_ID}/..%2F..%2Fcatalog.db",  # decoded into more segments: no route
        f"reports/{REPORT_ID}/catalog.db",  # one segment, not a report file: the name check
        f"reports/{REPORT_ID}/.env",
        f"reports/{REPORT_ID}/points.csv.bak",
        "reports/latest",  # not a report id
        f"reports/{REPORT_ID}%0A",  # a trailing newline would pass re.match(...$)
    ):
        assert httpx.get(f"{base}/accelbench/{bad}", headers=headers, timeout=10).status_code == 404, bad


def _browser(pw):
    if not Path(CHROMIUM).is_file() or shutil.which("chromium") is None:
        missing("Debian's chromium (apt-get install chromium)")
    return pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def _open_view(pw, base: str):
    """(browser, page, view frame): logged in, the Benchmarks view opened from the navigation, 1400 px."""
    browser = _browser(pw)
    context = browser.new_context(viewport={"width": WIDTH, "height": 1000})
    context.add_cookies([{"name": "_token", "value": _token(base), "url": base}])
    page = context.new_page()
    page.goto(f"{base}/", wait_until="networkidle")
    page.get_by_role("link", name="Benchmarks").first.click()
    view = page.frame_locator('iframe[title="Benchmarks"]')
    view.locator("table#reports").wait_for(timeout=30_000)
    return browser, page, view


# Widths in the document the element is in: the table, its container, the document and its window.
_WIDTHS = """t => ({table: t.scrollWidth, box: t.parentElement.clientWidth,
    doc: document.documentElement.scrollWidth, window: document.documentElement.clientWidth})"""


def _assert_no_horizontal_scroll(frame, table_ids: tuple[str, ...]) -> None:
    for table_id in table_ids:
        w = frame.locator(f"#{table_id}").evaluate(_WIDTHS)
        assert w["table"] <= w["box"], (table_id, w)  # the table fits its container: no scroll bar there
        assert w["doc"] <= w["window"] <= WIDTH, (table_id, w)  # nor on the page


def test_benchmarks_view_renders_table_and_plots_in_chromium(api_server) -> None:
    from playwright.sync_api import sync_playwright

    base, lake, _ = api_server
    summary = json.loads((lake / "reports" / REPORT_ID / "summary.json").read_text())
    shot = artifacts_dir() / "benchmarks-view.png"
    with sync_playwright() as pw:
        browser, page, view = _open_view(pw, base)
        try:
            assert view.locator("table#reports tbody tr").count() == 1
            link = view.get_by_role("link", name="Capacity planner")
            assert link.get_attribute("href") == f"reports/{REPORT_ID}#planner"
            page.screenshot(path=str(artifacts_dir() / "benchmarks-view-index.png"))
            view.get_by_role("link", name=REPORT_ID).click()
            view.locator("#best-table").wait_for(timeout=30_000)
            rows = view.locator("#best-table tbody tr")
            # Measured on the instance and within the SLOs: both m8g.xlarge versions, g6e.xlarge, and
            # c8g.2xlarge; r8g.large is retracted, c7g.xlarge misses the TTFT SLO, the laptop is local.
            assert rows.count() == summary["rows"]["best_under_slo"] == 4
            shown = " ".join(rows.all_inner_texts())
            assert all(t in shown for t in ("m8g.xlarge", "g6e.xlarge", "c8g.2xlarge")), shown
            assert not any(t in shown for t in ("r8g.large", "c7g.xlarge", "c8g.xlarge ")), shown
            assert "c8g.xlarge" in view.locator("#local-table").inner_text()
            for plot in ("throughput_vs_latency", "cost_at_slo", "version_trend"):
                svg = view.locator(f"#plot-{plot} svg")
                assert svg.count() == 1, plot
                box = svg.bounding_box()
                assert box and box["width"] > 200 and box["height"] > 100, (plot, box)
                assert svg.locator("path").count() > 5, plot  # axes, lines and bars were drawn
            assert "bad node" in view.locator("#retracted-table").inner_text()
            page.screenshot(path=str(shot))  # the report's top in the view: the answer, headline, best
            view.locator("#plot-cost_at_slo").scroll_into_view_if_needed()
            page.screenshot(path=str(shot.with_name("benchmarks-view-plots.png")))
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    print(f"screenshots: {shot}, benchmarks-view-index.png and benchmarks-view-plots.png beside it")


def test_headline_and_best_tables_fit_1400_px_without_horizontal_scroll(api_server) -> None:
    """In the view (Airflow's frame leaves the report 1328 px) and on the report page alone, at 1400 px."""
    from playwright.sync_api import sync_playwright

    base, _, _ = api_server
    with sync_playwright() as pw:
        browser, page, view = _open_view(pw, base)
        try:
            view.get_by_role("link", name=REPORT_ID).click()
            view.locator("#best-table").wait_for(timeout=30_000)
            alone = page.context.new_page()
            alone.goto(f"{base}/accelbench/reports/{REPORT_ID}", wait_until="load")
            alone.screenshot(path=str(artifacts_dir() / "report-1400-top.png"))
            for frame in (view, alone):  # with every figure's interval on a second line of its cell
                assert frame.locator("#best-table .ci").count() >= 4 * 6, "no intervals under the figures"
                assert frame.locator("#headline-table .ci").count() >= 4, "no intervals in the headline"
                _assert_no_horizontal_scroll(frame, ("headline-table", "best-table"))
        finally:
            browser.close()


def _planner_table(frame) -> list[dict[str, Any]]:
    """The planner's rows as shown: configuration id, point id, cell texts and numbers (data-value)."""
    return frame.locator("#planner-table tbody tr").evaluate_all(
        """trs => trs.map(tr => ({
            configuration_id: tr.dataset.configurationId,
            point_id: tr.dataset.pointId,
            texts: [...tr.cells].map(td => td.textContent),
            values: [...tr.cells].map(td => td.dataset.value === undefined ? null : Number(td.dataset.value)),
        }))"""
    )


def _by_instance(tables: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """configuration id -> "instance type vLLM version", to name the report's configurations."""
    return {p["configuration_id"]: f"{p['instance_type']} {p['vllm_version']}" for p in tables["points"]}


def _fill(frame, **values: str) -> None:
    for input_id, value in values.items():
        frame.locator(f"#planner-{input_id}").fill(value)


def test_capacity_planner_in_the_view_matches_a_hand_computation(api_server) -> None:
    from playwright.sync_api import sync_playwright

    base, _, tables = api_server
    name = _by_instance(tables)
    with sync_playwright() as pw:
        browser, page, view = _open_view(pw, base)
        try:
            view.get_by_role("link", name="Capacity planner").click()
            view.locator("#best-table").wait_for(timeout=30_000)
            assert view.locator("#planner-table").count() == 1, "the report has no capacity planner"
            _fill(view, rps="10", ttft="2000", tpot="50", e2el="", errors="1")
            shown = _planner_table(view)
            # Target 10 req/s, p99 TTFT <= 2000 ms, p99 TPOT <= 50 ms, errors <= 1%:
            # m8g.xlarge 0.32.0: c4 (3 req/s) breaks TTFT; c2 serves 2.5: ceil(10 / 2.5) = 4 replicas,
            #   4 x 0.20 USD/h x 730 h = 584.00 USD/month on-demand, 4 x 0.07 x 730 = 204.40 spot.
            # m8g.xlarge 0.31.0: c2 serves 2.0: 5 replicas, 5 x 0.20 x 730 = 730.00, 5 x 0.07 x 730 = 255.50.
            # g6e.xlarge: c32 (60 req/s) has 5% errors; c16 serves 36: 1 replica, 1.861 x 730 = 1,358.53.
            # c8g.2xlarge: 5 req/s, 2 replicas, no price: last. Left out: the laptop's c8g.xlarge (not
            # priced) and c7g.xlarge (TTFT 2600 ms at its only level).
            assert [(name[r["configuration_id"]], r["texts"][6:9]) for r in shown] == [
                ("m8g.xlarge 0.32.0", ["4", "584.00", "204.40"]),
                ("m8g.xlarge 0.31.0", ["5", "730.00", "255.50"]),
                ("g6e.xlarge 0.32.0", ["1", "1,358.53", "no price"]),
                ("c8g.2xlarge 0.32.0", ["2", "no price", "no price"]),
            ]
            expected = plan_capacity(tables["points"], 10, 2000, 50, None, 1 / 100)
            assert [(r["configuration_id"], r["point_id"]) for r in shown] == [
                (r["configuration_id"], r["point_id"]) for r in expected
            ]
            for row, ref in zip(shown, expected, strict=True):  # the very floats plan_capacity gives
                assert row["values"][5:7] == [ref["request_throughput"], ref["replicas"]]
                assert row["values"][7:9] == [ref["on_demand_usd_per_month"], ref["spot_usd_per_month"]]
            excluded = view.locator("#planner-excluded li").all_inner_texts()
            assert len(excluded) == 2
            assert any(t.startswith("c8g.xlarge") and "not priced: measured on local" in t for t in excluded)
            assert any(
                t.startswith("c7g.xlarge") and t.endswith("fails p99 TTFT (1 of 1 levels)") for t in excluded
            )
            view.locator("#planner").scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts_dir() / "benchmarks-view-planner.png"))

            # p99 TPOT <= 30 ms: m8g.xlarge 0.32.0 falls back to c1 (1 req/s): 10 x 0.20 x 730 = 1,460.00;
            # 0.31.0 to c1 (0.8 req/s): ceil(12.5) = 13 x 0.20 x 730 = 1,898.00. g6e.xlarge now ranks first.
            _fill(view, tpot="30")
            shown = _planner_table(view)
            assert [(name[r["configuration_id"]], r["texts"][6:8]) for r in shown] == [
                ("g6e.xlarge 0.32.0", ["1", "1,358.53"]),
                ("m8g.xlarge 0.32.0", ["10", "1,460.00"]),
                ("m8g.xlarge 0.31.0", ["13", "1,898.00"]),
                ("c8g.2xlarge 0.32.0", ["2", "no price"]),
            ]
            assert [r["point_id"] for r in shown] == [
                r["point_id"] for r in plan_capacity(tables["points"], 10, 2000, 30, None, 1 / 100)
            ]
            w = view.locator("#planner-table").evaluate(_WIDTHS)  # the page's width is the other tables' test
            assert w["table"] <= w["box"] <= w["window"], w
            view.locator("#planner").screenshot(
                path=str(artifacts_dir() / "benchmarks-view-planner-tpot30.png")
            )
        finally:
            browser.close()
