"""scripts/ui.sh, the Airflow UI on this machine, used as a newcomer would in headless Chromium (Debian's).

The real command starts in a process group of its own, on a fresh home, with the smallest campaign the form
allows as its defaults (the tiny model, one level of a few requests, one repeat): the test waits for the URL
it prints, logs in with the login it prints, finds the DAG list, triggers the campaign from its form with
one field changed, waits for the run and the report that follows it, and finds the report in the Benchmarks
view. Then a SIGINT to the group (Ctrl-C): the command stops, and nothing it started is left running, in its
group or anywhere under it (a task's vLLM server runs in a session of its own).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from accelbench.lake.store import Lake

from tests.support import fork_server
from tests.support.airflow_metadata import migrated
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, artifacts_dir
from tests.support.paths import REPO
from tests.support.servers import free_port, missing

pytestmark = [pytest.mark.airflow, pytest.mark.vllm]
CAMPAIGN = "accelbench_campaign"
REPORT = "accelbench_cross_tier_report"
# The smallest campaign the form allows a newcomer to run here: one server, one level, one repeat, a few
# short requests (the form then changes prompts_per_level from 4 to 3).
SMALLEST = {
    "instance_types": ["m8g.xlarge"],
    "concurrency": [1],
    "repeats": 1,
    "prompts_per_level": 4,
    "level_warmups": 1,
    "input_len": 32,
    "output_len": 8,
    "extra_engine_args": ["--enforce-eager"],
    "execution_mode": "local",
}
PROMPTS = 3  # what the form changes prompts_per_level to


_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


class UiCommand:
    """scripts/ui.sh running in a process group of its own: its output, and every process seen under it."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.home = Path(env["ACCELBENCH_HOME"])
        # SIGINT back to its default first: a shell started in the background (a CI runner's job) hands its
        # children SIGINT ignored, and a script cannot trap a signal ignored on entry (bash's rule).
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _DEFAULT_SIGINT,
                str(REPO / "scripts" / "ui.sh"),
                "--port",
                str(free_port()),
            ],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.log = log
        self.seen: dict[int, float] = {}  # pid -> create time, of every process under the command
        self._done = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        threading.Thread(target=self._watch, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.log.open("w") as out:
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                out.write(line)
                out.flush()

    def _watch(self) -> None:
        while not self._done.is_set() and self.proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(self.proc.pid).children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        self.seen.setdefault(child.pid, child.create_time())
            time.sleep(0.5)

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ended = self.proc.poll() is not None
            if ended:  # what it printed last may still be in the pipe: read to its end first
                self._reader.join(timeout=max(0.0, deadline - time.monotonic()))
            for line in self.lines:
                if found := re.search(pattern, line):
                    return found
            if ended:
                break
            time.sleep(0.5)
        raise AssertionError(f"scripts/ui.sh did not print {pattern!r}:\n{self.output()[-6000:]}")

    def left_running(self) -> list[str]:
        """Processes of the command's group, and processes seen under it, still running."""
        left = []
        for proc in psutil.process_iter(["pid", "create_time", "status", "cmdline"]):
            try:
                mine = os.getpgid(proc.pid) == self.proc.pid or self.seen.get(proc.pid) == proc.create_time()
            except (OSError, psutil.Error):
                continue
            if mine and proc.info["status"] != psutil.STATUS_ZOMBIE:
                left.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:150]}")
        return left

    def kill(self) -> None:
        """The clean-up of a failed test: everything seen, killed."""
        self._done.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid, born in self.seen.items():
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                if proc.create_time() == born:
                    proc.kill()


@pytest.fixture
def ui_command(tiny_model: Path, vllm_python: Path, tmp_path: Path) -> Iterator[UiCommand]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ACCELBENCH_"))} | {
        "ACCELBENCH_HOME": str(tmp_path / "home"),
        "ACCELBENCH_CAMPAIGN_DEFAULTS": json.dumps(SMALLEST | {"model": str(tiny_model)}),
        "ACCELBENCH_VLLM_PYTHON": str(vllm_python),
        **fork_server.inherited(),
    }
    # What a first start would otherwise do itself, done the fast way (CI time): Airflow's database, migrated
    # once per run (`airflow db migrate` then finds nothing to do), and the catalog seeded (no runs of the
    # catalog and prices DAGs; the script runs them through the scheduler when `accelbench show` fails).
    migrated(tmp_path / "home" / "airflow" / "airflow.db", env)
    _seed_catalog(tmp_path / "home")
    command = UiCommand(env, tmp_path / "ui.log")
    try:
        yield command
    finally:
        if command.proc.poll() is None or command.left_running():
            command.kill()
        command.proc.wait(timeout=30)
        print(f"scripts/ui.sh's output: {command.log}")


def _seed_catalog(home: Path) -> None:
    from accelbench.catalog.db import make_engine, migrate
    from accelbench.catalog.seed import upsert_instance_types
    from accelbench.tiers import load_seed

    engine = make_engine(f"sqlite:///{home / 'catalog.db'}")
    try:
        migrate(engine)
        upsert_instance_types(engine, load_seed(None))
    finally:
        engine.dispose()


class Api:
    def __init__(self, url: str, user: str, password: str) -> None:
        self.url = url
        response = httpx.post(f"{url}/auth/token", json={"username": user, "password": password}, timeout=30)
        response.raise_for_status()
        self.headers = {"Authorization": f"Bearer {response.json()['access_token']}"}

    def get(self, path: str, **params: Any) -> Any:
        response = httpx.get(f"{self.url}/api/v2{path}", headers=self.headers, params=params, timeout=30)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.get(f"/dags/{dag_id}/dagRuns", order_by="run_after")["dag_runs"]

    def states(self, dag_id: str, run_id: str) -> dict[str, str]:
        tis = self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        return {ti["task_id"]: ti["state"] for ti in tis}


def _until(what: str, ready: Callable[[], Any], command: UiCommand, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := ready():
            return value
        assert command.proc.poll() is None, f"scripts/ui.sh stopped:\n{command.output()[-6000:]}"
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}; scripts/ui.sh:\n{command.output()[-6000:]}")


def _ended(api: Api, dag_id: str) -> list[dict[str, Any]] | None:
    runs = api.runs(dag_id)
    return runs if runs and all(r["state"] in ("success", "failed") for r in runs) else None


def test_a_campaign_from_the_local_uis_form_ends_in_the_benchmarks_view(ui_command: UiCommand) -> None:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).is_file():
        missing("Debian's chromium (apt-get install chromium)")
    command = ui_command
    began = time.monotonic()
    url = command.wait_for(r"Airflow UI: (http://127\.0\.0\.1:\d+)$", timeout=240)[1]
    login = command.wait_for(r"log in as (\S+), password (\S+) \(kept in ", timeout=10)
    command.wait_for(r"Ctrl-C stops everything", timeout=240)  # the DAGs parsed and unpaused
    ready = time.monotonic()
    api = Api(url, login[1], login[2])
    dags = {d["dag_id"]: d for d in api.get("/dags", limit=100)["dags"]}
    # Schedules off: nothing runs on its own, every DAG unpaused, the report still follows each campaign.
    assert not any(d["is_paused"] for d in dags.values()), dags
    assert dags[CAMPAIGN]["timetable_summary"] is None and dags[CAMPAIGN]["next_dagrun_run_after"] is None
    assert dags[REPORT]["timetable_summary"] == "Asset"
    assert api.runs(CAMPAIGN) == [] and api.runs(REPORT) == []
    # Nothing failed to load: no DAG import error, no plugin import error (the UI's home page shows either).
    assert api.get("/importErrors")["total_entries"] == 0
    assert api.get("/plugins/importErrors")["total_entries"] == 0, api.get("/plugins/importErrors")
    shots = artifacts_dir()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/dags", wait_until="load")
            page.locator("input[name=username]").fill(login[1])  # the login the command printed
            page.locator("input[name=password]").fill(login[2])
            page.get_by_role("button", name="Sign in").click()
            # The DAG list.
            page.get_by_role("link", name=CAMPAIGN, exact=True).wait_for(timeout=60_000)
            assert page.get_by_role("link", name=REPORT, exact=True).count() == 1
            # The campaign's form: its defaults are the small campaign; one field changed.
            page.goto(f"{url}/dags/{CAMPAIGN}", wait_until="load")
            page.get_by_role("button", name="Trigger Dag").click()
            dialog = page.get_by_role("dialog")
            dialog.get_by_role("button", name="Load", exact=True).click()
            field = dialog.locator('[id="number-input:element_prompts_per_level:inc"]').get_attribute(
                "aria-controls"
            )
            prompts = dialog.locator(f'[id="{field}"]')
            assert prompts.input_value() == str(SMALLEST["prompts_per_level"])
            prompts.fill(str(PROMPTS))
            dialog.get_by_role("button", name="Trigger", exact=True).click()
            # The dialog closes when the API server has answered: on a busy CI host (three lanes on two CPUs,
            # Airflow's four processes among them) its requests took up to 26 s each, and a 30 s wait failed.
            dialog.wait_for(state="hidden", timeout=120_000)

            # The run ends (the scheduler, a LocalExecutor, a real vLLM server), then the report it triggers.
            (run,) = _until("the campaign run", lambda: _ended(api, CAMPAIGN), command, timeout=300)
            states = api.states(CAMPAIGN, run["dag_run_id"])
            assert run["state"] == "success" and run["run_type"] == "manual", states
            assert run["conf"]["prompts_per_level"] == PROMPTS and run["conf"]["repeats"] == 1
            (report,) = _until("the report run", lambda: _ended(api, REPORT), command, timeout=180)
            assert report["state"] == "success" and report["run_type"] == "asset_triggered", report
            measured = Lake(str(command.home / "lake")).read("runs").to_pylist()
            assert measured and {r["dag_run_id"] for r in measured} == {run["dag_run_id"]}
            assert all(r["status"] == "ok" and r["completed"] == PROMPTS for r in measured), measured
            (folder,) = (command.home / "lake" / "reports").iterdir()

            # The new report in the Benchmarks view.
            page.goto(f"{url}/", wait_until="load")
            page.get_by_role("link", name="Benchmarks").first.click()
            view = page.frame_locator('iframe[title="Benchmarks"]')
            view.locator("table#reports").wait_for(timeout=60_000)
            rows = view.locator("table#reports tbody tr")
            assert rows.count() == 1 and folder.name in rows.first.inner_text(), rows.all_inner_texts()
            view.get_by_role("link", name=folder.name).first.click()
            view.locator("#points-table").wait_for(timeout=60_000)
            points = view.locator("#points-table").inner_text()
            assert "m8g.xlarge" in points and "local: " in points, points
            page.screenshot(path=str(shots / "local-ui-benchmarks.png"), timeout=60_000)
        finally:
            browser.close()

    # Ctrl-C: SIGINT to the command's group, as a terminal sends it.
    used = time.monotonic()
    os.killpg(command.proc.pid, signal.SIGINT)
    assert command.proc.wait(timeout=90) == 130, command.output()[-4000:]
    stop = time.monotonic()
    print(f"ready {ready - began:.0f} s, form to report {used - ready:.0f} s, stop {stop - used:.0f} s")
    command.wait_for(r"stopped: nothing it started is running", timeout=10)
    assert command.left_running() == [], command.output()[-4000:]
    assert len(command.seen) >= 5  # the four processes and more were watched
