"""The "Benchmarks" view in a real Airflow API server, opened in headless Chromium (Debian's).

The API server runs as its own process on 127.0.0.1 with the simple auth manager and one user; the
test checks that the view refuses anonymous requests, then logs the browser in with a real token,
opens the view from the UI's navigation, and checks the report's table and plots rendered. The last
screenshot is kept under test-artifacts/ (or $ACCELBENCH_TEST_ARTIFACTS).
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

import httpx
import pytest
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report, write_report
from accelbench.report.model import Retraction

from tests.conftest import REPO
from tests.servers import free_port, missing
from tests.test_report_model import PRICES, RUNS

pytestmark = pytest.mark.airflow
CHROMIUM = "/usr/bin/chromium"
# Flags for a closed network and a root user (Chromium otherwise phones home and needs a sandbox).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPORT_ID = "20261130T120000Z"


def _artifacts() -> Path:
    path = Path(os.environ.get("ACCELBENCH_TEST_ARTIFACTS") or REPO / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def api_server(airflow_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, lake) of an API server with one report in its lake and the user alice."""
    home = tmp_path_factory.mktemp("view")
    lake = Lake(str(home / "lake"))
    runs = [r | {"run_id": f"r{i}", "date": "2026-11-10"} for i, r in enumerate(RUNS)]
    flt = ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50)
    tables = build_report(runs, PRICES, [Retraction("r6", "bad node", None)], flt)
    write_report(lake, REPORT_ID, tables, flt, len(runs), datetime(2026, 11, 30, 12, tzinfo=UTC))
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
        yield base, home / "lake"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _token(base: str) -> str:
    resp = httpx.post(f"{base}/auth/token", json={"username": "alice", "password": "wonderland"}, timeout=10)
    resp.raise_for_status()
    return resp.json()["access_token"]


def test_view_needs_an_airflow_user_and_serves_only_report_files(api_server) -> None:  # type: ignore[no-untyped-def]
    base, _ = api_server
    assert httpx.get(f"{base}/accelbench/", timeout=10).status_code == 401
    headers = {"Authorization": f"Bearer {_token(base)}"}
    index = httpx.get(f"{base}/accelbench/", headers=headers, timeout=30)
    assert index.status_code == 200 and REPORT_ID in index.text
    csv = httpx.get(f"{base}/accelbench/reports/{REPORT_ID}/best_under_slo.csv", headers=headers, timeout=10)
    assert csv.status_code == 200 and csv.text.startswith('"Tier","Instance type"')
    for bad in (
        f"reports/{REPORT_ID}/..%2F..%2Fcatalog.db",  # decoded into more segments: no route
        f"reports/{REPORT_ID}/catalog.db",  # one segment, not a report file: the name check
        f"reports/{REPORT_ID}/.env",
        f"reports/{REPORT_ID}/points.csv.bak",
        "reports/latest",  # not a report id
        f"reports/{REPORT_ID}%0A",  # a trailing newline would pass re.match(...$)
    ):
        assert httpx.get(f"{base}/accelbench/{bad}", headers=headers, timeout=10).status_code == 404, bad


def test_benchmarks_view_renders_table_and_plots_in_chromium(api_server) -> None:  # type: ignore[no-untyped-def]
    if not Path(CHROMIUM).is_file() or shutil.which("chromium") is None:
        missing("Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    base, lake = api_server
    summary = json.loads((lake / "reports" / REPORT_ID / "summary.json").read_text())
    shot = _artifacts() / "benchmarks-view.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_cookies([{"name": "_token", "value": _token(base), "url": base}])
            page = context.new_page()
            page.goto(f"{base}/", wait_until="networkidle")
            page.get_by_role("link", name="Benchmarks").first.click()
            view = page.frame_locator('iframe[title="Benchmarks"]')
            view.locator("table#reports").wait_for(timeout=30_000)
            assert view.locator("table#reports tbody tr").count() == 1
            view.get_by_role("link", name=REPORT_ID).click()
            view.locator("#best-table").wait_for(timeout=30_000)
            rows = view.locator("#best-table tbody tr")
            assert rows.count() == summary["rows"]["best_under_slo"] == 2  # r8g.large is retracted
            assert "m8g.xlarge" in rows.first.inner_text()
            for plot in ("throughput_vs_latency", "cost_at_slo", "version_trend"):
                svg = view.locator(f"#plot-{plot} svg")
                assert svg.count() == 1, plot
                box = svg.bounding_box()
                assert box and box["width"] > 200 and box["height"] > 100, (plot, box)
                assert svg.locator("path").count() > 5, plot  # axes, lines and bars were drawn
            assert "bad node" in view.locator("#retracted-table").inner_text()
            page.screenshot(path=str(shot))
            view.locator("#plot-cost_at_slo").scroll_into_view_if_needed()
            page.screenshot(path=str(shot.with_name("benchmarks-view-plots.png")))
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    print(f"screenshots: {shot} and {shot.with_name('benchmarks-view-plots.png')}")
