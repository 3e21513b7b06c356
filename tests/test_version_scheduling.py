"""Version campaigns through a real Airflow: scheduler, dag processor and API server started here on
SQLite and 127.0.0.1, the LocalExecutor, and vLLM CPU in local mode on the tiny model.

A REST request with a partition key and an asset event with a partition key each produce a campaign
run for that version that measures it; a repeated event for the same version produces a run that
measures nothing (the lake already holds it), and the version backfill does not even request it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from accelbench.lake.store import Lake

from tests.conftest import DAGS
from tests.servers import free_port

pytestmark = [pytest.mark.airflow, pytest.mark.vllm]
CAMPAIGN = "accelbench_cpu_version_campaign"
RELEASES_ASSET = "accelbench.runtime.vllm_cpu_releases"


@dataclass
class Airflow:
    url: str
    home: Path
    accelbench_home: Path
    logs: Path

    def api(self, method: str, path: str, **kw: Any) -> Any:
        response = httpx.request(method, f"{self.url}/api/v2{path}", timeout=30, **kw)
        assert response.status_code < 300, (method, path, response.status_code, response.text)
        return response.json()

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.api("GET", f"/dags/{dag_id}/dagRuns", params={"order_by": "run_after"})["dag_runs"]

    def wait(self, what: str, ready: Callable[[], Any], timeout: float = 600) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = ready()
            if value:
                return value
            time.sleep(2)
        tails = {p.name: p.read_text()[-3000:] for p in self.logs.glob("*.log")}
        raise AssertionError(f"timed out waiting for {what}; process logs:\n{json.dumps(tails, indent=1)}")

    def finished(self, dag_id: str, count: int) -> list[dict[str, Any]]:
        """Wait until `dag_id` has `count` runs, all finished; returns them, oldest first."""

        def done() -> list[dict[str, Any]] | None:
            runs = self.runs(dag_id)
            return (
                runs
                if len(runs) >= count and all(r["state"] in ("success", "failed") for r in runs)
                else None
            )

        return self.wait(f"{count} finished runs of {dag_id}", done)

    def states(self, dag_id: str, run_id: str) -> dict[str, str]:
        tis = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        return {ti["task_id"]: ti["state"] for ti in tis}


@pytest.fixture(scope="module")
def airflow(
    tiny_model: Path, vllm_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Airflow]:
    home = tmp_path_factory.mktemp("scheduling")
    logs = home / "process-logs"
    logs.mkdir()
    port = free_port()
    accelbench_home = home / "accelbench"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "ACCELBENCH_"))} | {
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow' / 'airflow.db'}",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",  # only the DAGs under test are unpaused
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API_AUTH__JWT_SECRET": "s" * 64,
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "ACCELBENCH_HOME": str(accelbench_home),
        "ACCELBENCH_OFFLINE": "1",
        "ACCELBENCH_REGISTRY_URL": "http://127.0.0.1:9",  # never the real registry
        "ACCELBENCH_EXECUTION_MODE": "local",
        "ACCELBENCH_VLLM_PYTHON": str(vllm_python),
        "ACCELBENCH_VERSION_MATRIX": json.dumps(
            {
                "instance_types": ["m8g.xlarge"],
                "model": str(tiny_model),
                "concurrency": [1],
                "repeats": 1,
                "prompts_per_level": 4,
                "input_len": 32,
                "output_len": 8,
                "extra_engine_args": ["--enforce-eager"],
            }
        ),
    }
    airflow_bin = [sys.executable, "-m", "airflow"]
    subprocess.run([*airflow_bin, "db", "migrate"], env=env, check=True, capture_output=True)
    procs = []
    for name, args in (
        ("api-server", ["api-server", "--host", "127.0.0.1", "--port", str(port), "-w", "1"]),
        ("scheduler", ["scheduler", "--skip-serve-logs"]),
        ("dag-processor", ["dag-processor"]),
    ):
        out = (logs / f"{name}.log").open("w")
        procs.append(
            (
                subprocess.Popen(
                    [*airflow_bin, *args],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                ),
                out,
            )
        )
    af = Airflow(f"http://127.0.0.1:{port}", home / "airflow", accelbench_home, logs)
    try:

        def healthy() -> bool:
            try:
                return httpx.get(f"{af.url}/api/v2/monitor/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        af.wait("the API server", healthy, timeout=180)
        # The catalog first (seeded by its own DAG, through the scheduler like everything else).
        af.wait("the DAGs to be parsed", lambda: len(af.api("GET", "/dags")["dags"]) >= 9, timeout=240)
        for dag_id in ("accelbench_instance_catalog", CAMPAIGN, "accelbench_cpu_version_backfill"):
            af.api("PATCH", f"/dags/{dag_id}", json={"is_paused": False})
        af.api("POST", "/dags/accelbench_instance_catalog/dagRuns", json={"logical_date": None})
        for run in af.finished("accelbench_instance_catalog", 1):  # with the scheduled one, if any
            assert run["state"] == "success", af.states("accelbench_instance_catalog", run["dag_run_id"])
        yield af
    finally:
        for proc, _ in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, out in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            out.close()


def _server_starts(accelbench_home: Path) -> int:
    return sum(
        len(p.read_text().splitlines()) for p in (accelbench_home / "work").glob("*/server-starts.jsonl")
    )


def test_partition_keys_from_rest_and_asset_events_run_one_campaign_per_version(airflow: Airflow) -> None:
    from accelbench.execution.local_server import local_vllm_version

    version = local_vllm_version()  # local mode serves its own vLLM: that is the version to request
    lake = Lake(str(airflow.accelbench_home / "lake"))

    # 1. REST: trigger the version campaign with a partition key.
    airflow.api("POST", f"/dags/{CAMPAIGN}/dagRuns", json={"logical_date": None, "partition_key": version})
    (first,) = airflow.finished(CAMPAIGN, 1)
    assert first["state"] == "success", airflow.states(CAMPAIGN, first["dag_run_id"])
    assert first["partition_key"] == version
    runs = lake.read("runs").to_pylist()
    assert [(r["vllm_version"], r["status"], r["dag_run_id"]) for r in runs] == [
        (version, "ok", first["dag_run_id"])
    ]
    assert _server_starts(airflow.accelbench_home) == 1

    # 2. An asset event with the partition key (forced: the lake already holds this version).
    (asset,) = airflow.api("GET", "/assets", params={"name_pattern": RELEASES_ASSET})["assets"]
    airflow.api(
        "POST",
        "/assets/events",
        json={"asset_id": asset["id"], "partition_key": version, "extra": {"force": True}},
    )
    second = airflow.finished(CAMPAIGN, 2)[-1]
    assert (
        second["state"] == "success"
        and second["partition_key"] == version
        and second["run_type"] == "asset_triggered"
    )
    assert airflow.states(CAMPAIGN, second["dag_run_id"])["benchmark"] == "success"
    assert _server_starts(airflow.accelbench_home) == 2

    # 3. The same version again without force: a run, but nothing measured twice.
    airflow.api("POST", "/assets/events", json={"asset_id": asset["id"], "partition_key": version})
    third = airflow.finished(CAMPAIGN, 3)[-1]
    states = airflow.states(CAMPAIGN, third["dag_run_id"])
    assert third["state"] == "success" and states["plan"] == "skipped" and states["benchmark"] == "skipped", (
        states
    )
    assert _server_starts(airflow.accelbench_home) == 2

    # 4. The version backfill does not even request it.
    airflow.api(
        "POST",
        "/dags/accelbench_cpu_version_backfill/dagRuns",
        json={"logical_date": None, "conf": {"versions": [version]}},
    )
    (backfill,) = airflow.finished("accelbench_cpu_version_backfill", 1)
    assert airflow.states("accelbench_cpu_version_backfill", backfill["dag_run_id"]) == {
        "request_campaigns": "skipped"
    }
    time.sleep(10)  # give the scheduler a chance to (wrongly) create a run
    assert len(airflow.runs(CAMPAIGN)) == 3 and _server_starts(airflow.accelbench_home) == 2
