"""Faults, each test named for one: S3, the Pricing API, the catalog database and the worker failing.

Every fault is real at the protocol level: S3 is moto behind a proxy on 127.0.0.1 that drops connections or
answers 503; the Pricing API is an HTTP endpoint on 127.0.0.1 that answers 5xx or throttles; the catalog is
a real PostgreSQL server whose backend is terminated in the middle of a transaction; the worker is a real
process running a local benchmark against a real vLLM CPU server, killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import boto3
import psutil
import psycopg
import pytest
from accelbench.aws.clients import make_client
from accelbench.catalog.db import make_engine
from accelbench.catalog.models import InstancePrice, InstanceType
from accelbench.catalog.price_refresh import refresh_online
from accelbench.catalog.seed import upsert_instance_types
from accelbench.catalog.seed_file import load_seed
from accelbench.errors import CatalogUnavailable
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import RawLocation, upload_raw, write_execution
from accelbench.lake.store import Lake
from botocore.stub import ANY, Stubber
from sqlalchemy import event, func, select

from tests.conftest import REPO
from tests.kube_api import FakeKubeAPI
from tests.pricelist import PricingEndpoint, price_document
from tests.servers import FaultyProxy, PostgresServer, free_port
from tests.test_pricing import SESSION, _spot_page

DATE = "2026-11-30"
TINY_CONFIG = REPO / "tests" / "data" / "model_configs" / "local--tiny-llama"


# ---- S3 unavailable during ingest ---------------------------------------------------------------


def _raw_on_s3(driven, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, RawLocation]:  # type: ignore[no-untyped-def]
    driver, envelope = driven
    spec_dir = tmp_path / "raw"
    shutil.copytree(driver.spec_dir, spec_dir)
    write_execution(spec_dir, execution_mode="local", node="host-1")
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    where = RawLocation("cpu", DATE, envelope["spec"]["campaign_id"], envelope["spec_id"])
    upload_raw(Lake(f"s3://{bucket}/lake"), spec_dir, where)
    # botocore's own retries stay on (2 tries each) under the lake's retries; fast waits for the test.
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    monkeypatch.setattr(Lake, "WRITE_WAIT_MAX_S", 0.5)
    return bucket, where


def _through(proxy: FaultyProxy, bucket: str, monkeypatch: pytest.MonkeyPatch) -> Lake:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.endpoint)
    lake = Lake(f"s3://{bucket}/lake")
    lake.fs.invalidate_cache()
    return lake


@pytest.mark.vllm
def test_s3_outage_during_ingest_is_retried_and_the_run_lands_once(
    driven, tmp_path, aws_on_moto, monkeypatch, caplog
) -> None:  # type: ignore[no-untyped-def]
    bucket, where = _raw_on_s3(driven, tmp_path, monkeypatch)
    with FaultyProxy(aws_on_moto.port) as proxy:
        lake = _through(proxy, bucket, monkeypatch)
        failed_puts: list[str] = []

        def outage(method: str, path: str) -> str | int | None:
            # S3 goes away for the first writes of the ingest: dropped connections, then 503s.
            if method == "PUT" and len(failed_puts) < 3:
                failed_puts.append(path)
                return "drop" if len(failed_puts) == 1 else 503
            return None

        proxy.fault = outage
        with caplog.at_level(logging.WARNING, logger="accelbench.lake.store"):
            data = ingest_raw(lake, where, "manual__faults", node=None)
            ingest_raw(lake, where, "manual__faults", node=None)  # a retried task: same files, same rows
    assert data is not None and len(failed_puts) == 3
    assert "retrying" in caplog.text
    runs, requests = lake.read("runs"), lake.read("requests")
    assert runs.num_rows == data.runs.num_rows == 4
    assert requests.num_rows == data.request_rows == 48
    assert len(set(runs["run_id"].to_pylist())) == 4


@pytest.mark.vllm
def test_s3_down_for_good_during_ingest_leaves_no_partial_run(
    driven, tmp_path, aws_on_moto, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    bucket, where = _raw_on_s3(driven, tmp_path, monkeypatch)
    with FaultyProxy(aws_on_moto.port) as proxy:
        lake = _through(proxy, bucket, monkeypatch)
        # The requests table lands, then S3 fails every write of the runs table until the tries run out.
        proxy.fault = lambda method, path: 503 if method == "PUT" and "/runs/" in path else None
        with pytest.raises(OSError):
            ingest_raw(lake, where, "manual__faults", node=None)
        runs_puts = [s for s in proxy.seen if s[0] == "PUT" and "/runs/" in s[1]]
        assert len(runs_puts) >= Lake.WRITE_ATTEMPTS  # retried before giving up
        # No run is visible: reports read `runs`, and no runs file exists.
        assert lake.read("runs").num_rows == 0
        # S3 is back: the task's retry lands the whole run.
        proxy.fault = lambda method, path: None
        data = ingest_raw(lake, where, "manual__faults", node=None)
    assert data is not None and lake.read("runs").num_rows == 4 and lake.read("requests").num_rows == 48


# ---- Pricing API throttling and 5xx ---------------------------------------------------------------


class _FlakyPricing(PricingEndpoint):
    """GetProducts on 127.0.0.1: m8g.large always 503; r8g.large a 500 first; c8g.large throttled first."""

    calls: ClassVar[dict[str, int]] = {}

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name = next(f["Value"] for f in request["Filters"] if f["Field"] == "instanceType")
        n = self.calls[name] = self.calls.get(name, 0) + 1
        if name == "m8g.large":
            status, body = 503, {"__type": "ServiceUnavailableException", "message": "unavailable"}
        elif name == "r8g.large" and n == 1:
            status, body = 500, {"__type": "InternalErrorException", "message": "internal"}
        elif name == "c8g.large" and n == 1:
            status, body = 400, {"__type": "ThrottlingException", "message": "Rate exceeded"}
        else:
            doc = price_document(name, {"r8g.large": "0.1178200000", "c8g.large": "0.0797600000"}[name])
            status, body = 200, {"FormatVersion": "aws_v1", "PriceList": [doc]}
        self.answer(status, body)


def test_pricing_throttling_and_5xx_are_retried_and_a_type_that_keeps_failing_is_reported(engine) -> None:  # type: ignore[no-untyped-def]
    names = ["c8g.large", "m8g.large", "r8g.large"]
    specs = [s for s in load_seed() if s.instance_type in names]
    upsert_instance_types(engine, specs)
    _FlakyPricing.calls = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FlakyPricing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    attempts = 3
    try:
        pricing = make_client(
            SESSION,
            "pricing",
            "us-east-1",
            attempts,
            endpoint_url=f"http://127.0.0.1:{server.server_address[1]}",
        )
        ec2 = make_client(SESSION, "ec2", "us-east-1", attempts)
        started = time.monotonic()
        with Stubber(ec2) as es:
            for name in [s.instance_type for s in specs]:  # refresh_online's order
                es.add_response(
                    "describe_spot_price_history",
                    _spot_page(name, {"us-east-1a": "0.03"}),
                    {"InstanceTypes": [name], "ProductDescriptions": ANY, "StartTime": ANY},
                )
            report = refresh_online(
                engine,
                SESSION,
                specs,
                ["us-east-1"],
                max_attempts=attempts,
                now=datetime(2026, 11, 30, 12, tzinfo=UTC),
                pricing_client=pricing,
                ec2_clients={"us-east-1": ec2},
            )
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
    # Every error was retried: the persistent one until the attempts ran out, with backoff between tries.
    assert _FlakyPricing.calls == {"c8g.large": 2, "m8g.large": attempts, "r8g.large": 2}
    assert elapsed > 0.5
    # The type that kept failing is reported by name; the others are stored.
    assert len(report.failed) == 1 and report.failed[0].startswith("m8g.large us-east-1 on_demand:")
    assert "ServiceUnavailable" in report.failed[0]
    assert sorted(report.priced) == sorted(
        [f"{n} us-east-1 spot" for n in names]
        + ["c8g.large us-east-1 on_demand", "r8g.large us-east-1 on_demand"]
    )
    with engine.connect() as conn:
        stored = conn.execute(
            select(InstancePrice.instance_type, func.count()).group_by(InstancePrice.instance_type)
        ).all()
    assert dict(stored) == {"c8g.large": 2, "m8g.large": 1, "r8g.large": 2}


# ---- catalog database down ---------------------------------------------------------------------


@pytest.mark.postgres
def test_catalog_database_down_fails_with_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelbench.airflow.tasks import migrate_catalog
    from airflow.sdk.exceptions import AirflowFailException

    url = f"postgresql://accelbench:s3cret-pw@127.0.0.1:{free_port()}/catalog"  # nothing listens there
    monkeypatch.setenv("AIRFLOW_CONN_DOWN_CATALOG", url)
    monkeypatch.setenv("ACCELBENCH_CATALOG_CONN_ID", "down_catalog")
    with pytest.raises(AirflowFailException) as err:
        migrate_catalog()
    message = str(err.value)
    assert message.startswith(
        "CatalogUnavailable: catalog database postgresql+psycopg://accelbench:***@127.0.0.1"
    )
    assert "is unreachable" in message and "s3cret-pw" not in message


@pytest.mark.postgres
def test_catalog_database_lost_mid_write_leaves_nothing_half_written(pg_server: PostgresServer) -> None:
    from accelbench.catalog.db import migrate

    url = pg_server.create_database(f"faults_{uuid.uuid4().hex[:8]}")
    engine = make_engine(url)
    migrate(engine)
    specs = load_seed()[:20]

    def server_goes_away(conn: Any) -> None:
        # Just before COMMIT, the backend of this transaction is killed from another session.
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))

    event.listen(engine, "commit", server_goes_away)
    with pytest.raises(CatalogUnavailable) as err:
        upsert_instance_types(engine, specs)
    event.remove(engine, "commit", server_goes_away)
    assert "failed during a write" in str(err.value) and "nothing of it was stored" in str(err.value)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(InstanceType)).scalar_one() == 0
    # The database is back (a new backend): the same write goes through whole.
    assert len(upsert_instance_types(engine, specs).inserted) == len(specs)
    engine.dispose()


# ---- the Airflow worker dies mid-benchmark (local mode) ------------------------------------------


WORKER = """
import sys
from accelbench.campaign.spec import BenchmarkSpec
from accelbench.execution.local import run_local
from accelbench.lake.store import Lake
run_local(BenchmarkSpec.model_validate_json(sys.argv[1]), Lake(sys.argv[2]), sys.argv[3], "attempt-1")
"""


def _group(pgid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


@pytest.mark.vllm
def test_worker_death_in_local_mode_stops_the_orphaned_server_and_the_retry_lands_once(
    tiny_model: Path, vllm_python: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from accelbench.campaign.spec import BenchmarkSpec, LoadPlan
    from accelbench.config import Settings
    from accelbench.execution.local import campaign_workdir, run_local

    from tests.test_local_server import tiny_spec

    plan = LoadPlan(input_len=32, output_len=8, concurrency=(1, 2), prompts_per_level=6, warmups=1, seed=3)
    spec = BenchmarkSpec(server=tiny_spec(tiny_model), load=plan, campaign_id="worker-death")
    lake = Lake(str(tmp_path / "lake"))
    pid_file = (
        campaign_workdir(Settings.from_env(), spec.campaign_id) / spec.spec_id / "server" / "server.pid"
    )
    worker = subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "python"), "-c", WORKER, spec.model_dump_json(), lake.uri, DATE],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Wait until the worker is mid-benchmark: its server is up and `vllm bench serve` is running.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            clients = [
                p
                for p in psutil.Process(worker.pid).children(recursive=True)
                if "bench" in " ".join(p.cmdline())
            ]
            if clients and pid_file.exists():
                break
            assert worker.poll() is None, "the worker ended before the benchmark started"
            time.sleep(0.5)
        else:
            pytest.fail("the worker never reached the benchmark")
        pgid = json.loads(pid_file.read_text())["pgid"]
        assert _group(pgid), "the server's process group is running"
        worker.kill()  # the worker dies: SIGKILL, no cleanup of its own
        worker.wait(timeout=30)
        psutil.wait_procs(clients, timeout=15)
        assert not [c for c in clients if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        left_behind = [p.pid for p in _group(pgid)]
        # The retry: a new attempt of the same spec stops what is left, then measures again.
        with caplog.at_level(logging.WARNING, logger="accelbench.execution.local_server"):
            result = run_local(spec, lake, DATE, "attempt-2")
        assert not _group(pgid), "the orphaned server's processes are gone"
        if left_behind:
            assert "earlier attempt's vLLM server" in caplog.text
    finally:
        if worker.poll() is None:
            worker.kill()
    assert result["failure"] is None
    where = RawLocation("cpu", DATE, spec.campaign_id, spec.spec_id)
    data = ingest_raw(lake, where, "manual__worker-death", "attempt-2")
    assert data is not None
    runs = lake.read("runs").to_pylist()
    # Nothing lost, nothing twice: one row per level, all from the retry, with every request.
    assert sorted((r["level_value"], r["status"]) for r in runs) == [(1.0, "ok"), (2.0, "ok")]
    assert lake.read("requests").num_rows == 12
    assert not pid_file.exists()


# ---- a benchmark pod that never schedules ----------------------------------------------------------


def _kubernetes_campaign(fake: FakeKubeAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Kubernetes mode through `fake`, an S3 lake on moto; returns the lake URI."""
    kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(connection))
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", f"s3://{bucket}")
    monkeypatch.setenv("ACCELBENCH_LOADGEN_IMAGE", "registry.example.org/accelbench-loadgen:0.1.0")
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(TINY_CONFIG.parent))
    return f"s3://{bucket}"


K8S_CONF = {"model": "local/tiny-llama", "instance_types": ["m8g.xlarge"], "execution_mode": "kubernetes"}


@pytest.mark.airflow
def test_a_benchmark_pod_that_never_schedules_fails_naming_the_type_nodepool_and_tolerations(
    airflow_db, accelbench_env, tmp_path, monkeypatch, capfd, caplog, aws_on_moto
) -> None:  # type: ignore[no-untyped-def]
    from tests.test_dags import _run, _states

    with FakeKubeAPI(mode="unschedulable") as fake:
        _kubernetes_campaign(fake, tmp_path, monkeypatch)
        monkeypatch.setenv("ACCELBENCH_POD_SCHEDULE_TIMEOUT_S", "3")
        assert str(_run(airflow_db, "accelbench_instance_catalog").state) == "success"
        capfd.readouterr()
        started = time.monotonic()
        run = _run(airflow_db, "accelbench_cpu_campaign", K8S_CONF)
        elapsed = time.monotonic() - started
    assert fake.rejections == [], fake.rejections  # the pod and every patch passed strict validation
    states = _states(run)
    assert states["benchmark"] == "failed" and states["watcher"] == "failed", states
    text = "".join(capfd.readouterr()) + caplog.text
    found = re.search(r"PodNotScheduled: (benchmark pod .*?these tolerations\.)", text, re.S)
    assert found, text[-5000:]
    message = found[1]
    for part in (
        "for m8g.xlarge was not scheduled within 3 s",
        "Karpenter NodePool accelbench-cpu",
        "node.kubernetes.io/instance-type=m8g.xlarge",
        "kubernetes.io/arch=arm64",
        "accelbench.io/cpu=true:NoSchedule",
        "accelbench.io/dedicated=true:NoSchedule",
        "0/3 nodes are available",
    ):
        assert part in message, (part, message)
    # One pod, deleted after the timeout; no retry that would wait as long again.
    assert fake.count("POST") == 1 and not fake.pods
    assert any(m == "DELETE" for m, _ in fake.calls)
    assert elapsed < 120


# ---- the Airflow worker dies mid-benchmark (kubernetes mode) --------------------------------------


ATTEMPT = """
import json, sys
import pendulum
from airflow.dag_processing.dagbag import DagBag
dag = DagBag(dag_folder=sys.argv[1]).get_dag("accelbench_cpu_campaign")
when = pendulum.parse(sys.argv[2])
dag.test(run_after=when, logical_date=when, run_conf=json.loads(sys.argv[3]))
"""


@pytest.mark.airflow
@pytest.mark.vllm
def test_worker_death_in_kubernetes_mode_reconnects_to_the_same_pod_and_lands_once(
    airflow_db, accelbench_env, tiny_model, vllm_python, tmp_path, monkeypatch, capfd, caplog, aws_on_moto
) -> None:  # type: ignore[no-untyped-def]
    """Attempt 1 (its own process) creates the pod and watches it; it is SIGKILLed mid-benchmark. The retry
    finds the pod still running, reattaches, and reads its result. The pod's two containers are played for
    real: when the fake API lets the main container finish, `accelbench-loadgen` runs with the pod's
    environment against a real vLLM server (the sidecar's part) and writes the evidence to the lake."""
    import pendulum
    from accelbench.campaign.spec import BenchmarkSpec
    from accelbench.execution.local_server import LocalServer

    from tests.conftest import DAGS, hub_model
    from tests.test_campaign_dag import tiny_campaign_conf
    from tests.test_dags import _dagbag, _run, _states
    from tests.test_loadgen_pod import run_loadgen

    # The pod names the model by its id; the server and the tokenizer find it in the Hugging Face cache.
    model_id, store = hub_model(tiny_model, tmp_path, monkeypatch)
    conf = tiny_campaign_conf(tiny_model) | {"model": model_id, "execution_mode": "kubernetes"}
    pods_ran: list[str] = []

    def main_container(pod: dict[str, Any]) -> dict[str, Any]:
        (base,) = [c for c in pod["spec"]["containers"] if c["name"] == "base"]
        env = {e["name"]: e["value"] for e in base["env"] if "value" in e}
        spec = BenchmarkSpec.model_validate_json(env["ACCELBENCH_BENCHMARK_SPEC"])
        pods_ran.append(pod["metadata"]["name"])
        work = tmp_path / f"pod-{len(pods_ran)}"
        with LocalServer(spec.server, work / "server", python=vllm_python) as server:
            # The pod's environment, but the server is on its own port here, and the Hugging Face cache is
            # the prefilled one of this test, not the pod's empty /tmp/hf.
            pod_env = {k: v for k, v in env.items() if k not in ("ACCELBENCH_SERVER_URL", "HF_HOME")}
            proc = run_loadgen(
                spec, server, lake_uri, work / "raw", vllm=vllm_python.parent / "vllm", pod_env=pod_env
            )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    with FakeKubeAPI(mode="run") as fake:
        lake_uri = _kubernetes_campaign(fake, tmp_path, monkeypatch)
        monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(store))
        fake.on_finish = main_container
        assert str(_run(airflow_db, "accelbench_instance_catalog").state) == "success"
        when = "2026-11-30T06:00:00+00:00"
        first = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "python"), "-c", ATTEMPT, str(DAGS), when, json.dumps(conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 240
            while fake.follows < 1:  # attempt 1 created the pod and is following its log: mid-benchmark
                assert first.poll() is None, "attempt 1 ended before its pod ran"
                assert time.monotonic() < deadline, fake.calls
                time.sleep(0.5)
        finally:
            first.kill()  # the worker dies
            first.wait(30)
        assert fake.count("POST") == 1 and len(fake.pods) == 1
        fake.finish_on_follow = fake.follows + 1  # the pod's benchmark ends while the retry watches it
        logical = pendulum.parse(when)
        dag = _dagbag(airflow_db).get_dag("accelbench_cpu_campaign")
        run = dag.test(run_after=logical, logical_date=logical, run_conf=conf)  # the retry
    assert fake.errors == [], fake.errors[0]
    assert fake.rejections == [], fake.rejections  # the pod and every patch passed strict validation
    states = _states(run)
    assert str(run.state) == "success", states
    text = "".join(capfd.readouterr()) + caplog.text
    assert "Reusing existing pod" in text or "Reconnecting to pod" in text
    # One pod, created once, run once; deleted at the end.
    assert fake.count("POST") == 1 and len(pods_ran) == 1 and not fake.pods
    lake = Lake(lake_uri)
    runs = lake.read("runs").to_pylist()
    assert sorted((r["level_value"], r["status"]) for r in runs) == [(1.0, "ok"), (2.0, "ok")]
    assert {r["dag_run_id"] for r in runs} == {run.run_id} and {r["execution_mode"] for r in runs} == {
        "kubernetes"
    }
    assert lake.read("requests").num_rows == 12
