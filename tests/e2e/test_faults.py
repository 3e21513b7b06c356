"""Faults, each test named for one: S3, the Pricing API, the catalog database, the worker and the server
failing.

Every fault is real at the protocol level: S3 is moto behind a proxy on 127.0.0.1 that drops connections or
answers 503; the Pricing API is an HTTP endpoint on 127.0.0.1 that answers 5xx or throttles; the catalog is
a real PostgreSQL server whose backend is terminated in the middle of a transaction; the worker is a real
process running a local benchmark against a real vLLM CPU server, killed with SIGKILL; the server is the
zero-work server run as LocalServer runs vLLM, SIGKILLed mid-level or failing some requests, or a pod's server
sidecar that the API stand-in reports OOM-killed and restarted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass
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
from accelbench.core.server_group import ServerGroup
from accelbench.errors import CatalogUnavailable
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import RawLocation, upload_raw, write_execution
from accelbench.lake.store import Lake
from accelbench.loadgen.bench_client import BenchClient
from accelbench.local.server import LocalServer
from accelbench.tiers import load_seed
from botocore.stub import ANY, Stubber
from sqlalchemy import event, func, select

from tests.support import fork_server
from tests.support.kube_api import NODECLAIM, PULL_S, TIMELINE, FakeKubeAPI
from tests.support.paths import REPO
from tests.support.pricelist import SESSION, PricingEndpoint, price_document, spot_page
from tests.support.servers import FaultyProxy, PostgresServer, free_port

DATE = "2026-11-30"
TINY_CONFIG = REPO / "tests" / "data" / "model_configs" / "local--tiny-llama"


# ---- S3 unavailable during ingest ---------------------------------------------------------------


def _raw_on_s3(driven, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, RawLocation]:
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
) -> None:
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
    assert runs.num_rows == data.runs.num_rows == 5  # 2 levels x 2 repeats, and the recheck
    assert requests.num_rows == data.request_rows == 60
    assert len(set(runs["run_id"].to_pylist())) == 5


@pytest.mark.vllm
def test_s3_down_for_good_during_ingest_leaves_no_partial_run(
    driven, tmp_path, aws_on_moto, monkeypatch
) -> None:
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
    assert data is not None and lake.read("runs").num_rows == 5 and lake.read("requests").num_rows == 60


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


def test_pricing_throttling_and_5xx_are_retried_and_a_type_that_keeps_failing_is_reported(engine) -> None:
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
                    spot_page(name, {"us-east-1a": "0.03"}),
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
    from accelbench.airflow.tasks.catalog import migrate_catalog
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
from accelbench.core.server_group import ServerGroup
from accelbench.local.executor import run_local
from accelbench.lake.store import Lake
run_local(ServerGroup.model_validate_json(sys.argv[1]), Lake(sys.argv[2]), sys.argv[3], "attempt-1")
"""


def _group(pgid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def _runs(word: str, proc: psutil.Process) -> bool:
    """Whether a live process's command line holds `word`: a child that ended (a zombie, or gone) between
    the listing and the read does not count, rather than failing the poll (CI run of stop 48)."""
    try:
        return word in " ".join(proc.cmdline())
    except psutil.Error:
        return False


@pytest.mark.vllm
def test_worker_death_in_local_mode_stops_the_orphaned_server_and_the_retry_lands_once(
    tiny_model: Path, vllm_python: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from accelbench.config import Settings
    from accelbench.core.spec import BenchmarkSpec, LoadPlan
    from accelbench.local.executor import campaign_workdir, run_local

    from tests.support.specs import tiny_spec

    plan = LoadPlan(input_len=32, output_len=8, concurrency=(1, 2), prompts_per_level=6, warmups=1, seed=3)
    spec = BenchmarkSpec(server=tiny_spec(tiny_model), load=plan, campaign_id="worker-death")
    group = ServerGroup(specs=(spec,))
    lake = Lake(str(tmp_path / "lake"))
    pid_file = (
        campaign_workdir(Settings.from_env(), spec.campaign_id) / group.group_id / "server" / "server.pid"
    )
    # With vLLM's default multiprocessing (the tests' servers run without it, tests/conftest.py): the
    # server's engine core and worker are processes of their own, children of the API server. And a `vllm
    # serve` of its own, not one borrowed from the run's fork server: this is the product's process group.
    env = {k: v for k, v in os.environ.items() if k != fork_server.FORK_SERVER}
    worker = subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "python"), "-c", WORKER, group.model_dump_json(), lake.uri, DATE],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env | {"VLLM_ENABLE_V1_MULTIPROCESSING": "1"},
    )
    try:
        # Wait until the worker is mid-benchmark: its server is up and `vllm bench serve` is running.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            clients = [p for p in psutil.Process(worker.pid).children(recursive=True) if _runs("bench", p)]
            log = pid_file.parent / "server.log"
            if clients and pid_file.exists() and '/health HTTP/1.1" 200' in log.read_text(errors="replace"):
                break  # the server is up: its engine core and worker have started
            assert worker.poll() is None, "the worker ended before the benchmark started"
            time.sleep(0.5)
        else:
            pytest.fail("the worker never reached the benchmark")
        record = json.loads(pid_file.read_text())
        pgid, earlier_tmp = record["pgid"], Path(record["tmpdir"])
        assert earlier_tmp.is_dir()  # the server's private TMPDIR (its ZeroMQ sockets)
        members = _group(pgid)
        assert len(members) >= 3, [p.name() for p in members]  # API server, engine core, worker
        worker.kill()  # the worker dies: SIGKILL, no cleanup of its own
        worker.wait(timeout=30)
        psutil.wait_procs(clients, timeout=15)
        assert not [c for c in clients if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        # Every process of the server's group dies with the worker (accelbench.lifetime.watch_group), the
        # engine core too, which outlived its API server before; no retry needed to stop it.
        _, alive = psutil.wait_procs(members, timeout=15)
        assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], [p.name() for p in alive]
        # The retry measures again (an orphan it found would be stopped first: LocalServer.stop_orphans).
        with caplog.at_level(logging.WARNING, logger="accelbench.local.server"):
            result = run_local(group, lake, DATE, "attempt-2")
        assert not _group(pgid) and "earlier attempt's vLLM server" not in caplog.text
        assert not earlier_tmp.exists()  # what the killed attempt could not remove, the retry did
    finally:
        if worker.poll() is None:
            worker.kill()
    assert [r.failure for r in result.runs] == [None] and result.stopped is None
    where = RawLocation("cpu", DATE, spec.campaign_id, spec.spec_id)
    data = ingest_raw(lake, where, "manual__worker-death", "attempt-2")
    assert data is not None
    runs = lake.read("runs").to_pylist()
    # Nothing lost, nothing twice: one row per level and the recheck, all from the retry, every request.
    assert sorted((r["level_value"], r["status"], r["recheck"]) for r in runs) == [
        (1.0, "ok", False),
        (1.0, "ok", True),
        (2.0, "ok", False),
    ]
    assert lake.read("requests").num_rows == 18
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
) -> None:
    from tests.support.airflow_dags import run_dag, task_states

    with FakeKubeAPI(mode="unschedulable") as fake:
        _kubernetes_campaign(fake, tmp_path, monkeypatch)
        monkeypatch.setenv("ACCELBENCH_POD_SCHEDULE_TIMEOUT_S", "3")
        assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
        capfd.readouterr()
        started = time.monotonic()
        run = run_dag(airflow_db, "accelbench_campaign", K8S_CONF)
        elapsed = time.monotonic() - started
    assert fake.rejections == [], fake.rejections  # the pod and every patch passed strict validation
    states = task_states(run)
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
dag = DagBag(dag_folder=sys.argv[1]).get_dag("accelbench_campaign")
when = pendulum.parse(sys.argv[2])
dag.test(run_after=when, logical_date=when, run_conf=json.loads(sys.argv[3]))
"""


@pytest.mark.airflow
@pytest.mark.vllm
def test_worker_death_in_kubernetes_mode_reconnects_to_the_same_pod_and_lands_once(
    airflow_db,
    accelbench_env,
    tiny_model,
    vllm_python,
    vllm_server,
    tmp_path,
    monkeypatch,
    capfd,
    caplog,
    aws_on_moto,
) -> None:
    """Attempt 1 (its own process) creates the pod and watches it; it is SIGKILLed mid-benchmark. The retry
    finds the pod still running, reattaches, and reads its result. The pod's two containers are played for
    real: when the fake API lets the main container finish, `accelbench-loadgen` runs with the pod's
    environment against a real vLLM server (the sidecar's part: the session's server, on the tiny model
    under the name the campaign asks for) and writes the evidence to the lake."""
    import pendulum

    from tests.support.airflow_dags import load_dag, run_dag, task_states
    from tests.support.loadgen import run_loadgen
    from tests.support.models import hub_model
    from tests.support.paths import DAGS
    from tests.support.specs import tiny_campaign_conf

    # The pod names the model by its id; the tokenizer finds it in the Hugging Face cache.
    model_id, store = hub_model(tiny_model, tmp_path, monkeypatch)
    served = vllm_server.spec.served_model_name
    conf = tiny_campaign_conf(tiny_model) | {
        "model": model_id,
        "execution_mode": "kubernetes",
        "served_model_name": served,
    }
    pods_ran: list[str] = []

    def main_container(pod: dict[str, Any]) -> dict[str, Any]:
        (base,) = [c for c in pod["spec"]["containers"] if c["name"] == "base"]
        env = {e["name"]: e["value"] for e in base["env"] if "value" in e}
        (spec,) = ServerGroup.model_validate_json(env["ACCELBENCH_BENCHMARK_SPEC"]).specs
        assert spec.server.served_model_name == served  # what the session's server answers to
        pods_ran.append(pod["metadata"]["name"])
        work = tmp_path / f"pod-{len(pods_ran)}"
        # The pod's environment, but the server is on its own port here, and the Hugging Face cache is the
        # prefilled one of this test, not the pod's empty /tmp/hf.
        pod_env = {k: v for k, v in env.items() if k not in ("ACCELBENCH_SERVER_URL", "HF_HOME")}
        proc = run_loadgen(
            spec, vllm_server, lake_uri, work / "raw", vllm=vllm_python.parent / "vllm", pod_env=pod_env
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    with FakeKubeAPI(mode="run") as fake:
        # The server container's log: the session's real vLLM server's, as vLLM wrote it.
        fake.container_logs["server"] = vllm_server.log_path.read_text(errors="replace")
        lake_uri = _kubernetes_campaign(fake, tmp_path, monkeypatch)
        monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(store))
        fake.on_finish = main_container
        assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
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
        dag = load_dag(airflow_db, "accelbench_campaign")
        run = dag.test(run_after=logical, logical_date=logical, run_conf=conf)  # the retry
    assert fake.errors == [], fake.errors[0]
    assert fake.rejections == [], fake.rejections  # the pod and every patch passed strict validation
    states = task_states(run)
    assert str(run.state) == "success", states
    text = "".join(capfd.readouterr()) + caplog.text
    assert "Reusing existing pod" in text or "Reconnecting to pod" in text
    # One pod, created once, run once; deleted at the end.
    assert fake.count("POST") == 1 and len(pods_ran) == 1 and not fake.pods
    lake = Lake(lake_uri)
    runs = lake.read("runs").to_pylist()
    assert sorted((r["level_value"], r["status"], r["recheck"]) for r in runs) == [
        (1.0, "ok", False),
        (1.0, "ok", True),
        (2.0, "ok", False),
    ]
    assert {r["dag_run_id"] for r in runs} == {run.run_id} and {r["execution_mode"] for r in runs} == {
        "kubernetes"
    }
    assert lake.read("requests").num_rows == 18
    # What the server container's log said it served (read before the pod was deleted): unquantized.
    assert {r["server_quantization"] for r in runs} == {"none"}
    # Its start-up, read from the pod's conditions, events and node before the pod was deleted (the stand-in
    # plays kube_api.TIMELINE), landed beside its runs.
    (startup,) = lake.read("startups").to_pylist()
    t = TIMELINE
    assert (startup["scheduling_s"], startup["image_pull_s"], startup["server_start_s"]) == (
        t["scheduled"],
        t["server_started"] - t["scheduled"],
        t["loadgen_started"] - t["server_started"],
    )
    assert startup["ready_s"] == t["loadgen_started"] and startup["process_start_s"] is None
    assert (startup["node_launch_s"], startup["kubelet_pull_s"], startup["nodeclaim"]) == (
        t["node_created"],
        PULL_S,
        NODECLAIM,
    )
    assert startup["execution_mode"] == "kubernetes" and startup["capacity_type"] == "on-demand"
    assert startup["spec_id"] == runs[0]["spec_id"] and startup["dag_run_id"] == run.run_id
    assert startup["first_level_s"] is not None and startup["first_level_s"] >= 0


# ---- the server dies mid-level, or fails some requests and lives -----------------------------------


@dataclass
class ZeroServerProcess(LocalServer):
    """The zero-work server (benchmarks/zero_server.py), launched as LocalServer launches `vllm serve`:
    its own process group, a log file, /health awaited. A level's server death without an engine."""

    zero_args: tuple[str, ...] = ()

    def command(self) -> list[str]:
        script = REPO / "benchmarks" / "zero_server.py"
        return [sys.executable, str(script), "--port", str(self.port), *self.zero_args]


def _zero_spec(tiny_model: Path, concurrency: tuple[int, ...], prompts: int) -> Any:
    from accelbench.core.spec import BenchmarkSpec, LoadPlan

    from tests.support.specs import tiny_spec

    plan = LoadPlan(
        input_len=16, output_len=16, concurrency=concurrency, prompts_per_level=prompts, warmups=0
    )
    return BenchmarkSpec(server=tiny_spec(tiny_model), load=plan, campaign_id="server-faults")


def _landed(driver: Any, envelope: dict[str, Any], tmp_path: Path, **hints: Any) -> Lake:
    lake = Lake(str(tmp_path / "lake"))
    where = RawLocation("cpu", DATE, envelope["spec"]["campaign_id"], envelope["spec_id"])
    upload_raw(lake, driver.spec_dir, where)
    assert ingest_raw(lake, where, "manual__server-faults", **hints) is not None
    return lake


@pytest.mark.vllm
def test_a_server_killed_mid_level_leaves_a_failed_row_with_the_clients_counts(
    tiny_model: Path, vllm_python: Path, bench_client: BenchClient, tmp_path: Path
) -> None:
    from accelbench.loadgen import server_metrics
    from accelbench.loadgen.driver import Driver, summary

    prompts, killed_after = 80, 20
    spec = _zero_spec(tiny_model, (4, 8), prompts)
    # 16 tokens, 20 ms to the first and 10 ms between: 80 requests 4 at a time take about 3.4 s.
    server = ZeroServerProcess(
        spec.server, tmp_path / "server", zero_args=("--ttft-ms", "20", "--itl-ms", "10")
    )
    with server:
        driver = Driver(
            spec,
            server.url,
            tmp_path / "raw",
            vllm=str(vllm_python.parent / "vllm"),
            server_pid=server.server_pid,
            server_exit=server.exit_status,
            metrics_interval_s=0.2,
            client=bench_client,  # the session's warm runner: vLLM's import is most of a fresh one's time
        )

        def kill_mid_level() -> None:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    if server_metrics.scrape(server.url)["request_success"] >= killed_after:
                        break
                time.sleep(0.02)
            os.killpg(server.process.pid, signal.SIGKILL)

        killer = threading.Thread(target=kill_mid_level, daemon=True)
        killer.start()
        envelope = driver.run()
        killer.join(timeout=5)
    (level,) = envelope["levels"]  # the driver stopped: level 8 never ran
    assert (level["level_value"], level["status"], level["result_file"]) == (4, "failed", "c4-r0.json")
    done, failed = level["client_completed"], level["client_failed"]
    assert killed_after <= done < prompts and failed > 0 and done + failed == prompts
    assert level["server_exit_code"] == 128 + signal.SIGKILL  # as a container reports it
    assert "ready" in level["server_log_tail"]  # the zero server's own log line
    assert level["error"].startswith(f"server died during the level: {failed} of {prompts} requests failed")
    assert "exit code 137" in level["error"]
    assert level["tokens_agree"] is None and level["server_counters"] == {}  # no counters after a death
    assert "c4-r0" in envelope["failure"]
    assert summary(envelope)["levels"][0]["client_completed"] == done

    runs = _landed(driver, envelope, tmp_path).read("runs").to_pylist()
    (row,) = runs
    assert (row["status"], row["completed"], row["failed"]) == ("failed", done, failed)
    assert (row["server_exit_code"], row["server_log_tail"]) == (137, level["server_log_tail"])
    # The percentiles are the finished requests': at least the server's 20 ms to the first token.
    assert row["p50_ttft_ms"] >= 20 and row["mean_e2el_ms"] >= 20 + 15 * 10
    assert row["total_output_tokens"] == 16 * done


@pytest.mark.vllm
def test_a_level_with_some_failed_requests_is_errors_and_the_next_level_runs(
    tiny_model: Path, vllm_python: Path, bench_client: BenchClient, tmp_path: Path
) -> None:
    from accelbench.lake.ingest import Provenance, ingest
    from accelbench.lake.raw import dir_reader
    from accelbench.loadgen.driver import Driver

    spec = _zero_spec(tiny_model, (2, 4), 20)
    # Every 10th request is answered 500 (as vLLM 0.32's client fails 1 in 10^4 at high concurrency).
    with ZeroServerProcess(spec.server, tmp_path / "server", zero_args=("--fail-every", "10")) as server:
        driver = Driver(
            spec,
            server.url,
            tmp_path / "raw",
            vllm=str(vllm_python.parent / "vllm"),
            server_exit=server.exit_status,
            client=bench_client,
        )
        envelope = driver.run()
        assert server.exit_status() is None  # alive to the end
    assert envelope["failure"] is None
    levels = envelope["levels"]
    # Both levels and the recheck of the first: a few failed requests never stop a run.
    assert [(r["level_value"], r["status"], r["recheck"]) for r in levels] == [
        (2, "errors", False),
        (4, "errors", False),
        (2, "errors", True),
    ]
    for r in levels:
        assert (r["client_completed"], r["client_failed"]) == (18, 2)
        assert r["error"] == "2 of 20 requests failed (first error: Internal Server Error)"
        # The server counted the 18 it answered, as the client did (the zero server counts prompt words, not
        # tokens: only the generated tokens can agree).
        assert r["server_counters"]["request_success"] == 18 and r["server_exit_code"] is None
        assert r["server_counters"]["generation_tokens"] == r["client_output_tokens"] == 18 * 16
    rows = ingest(envelope, dir_reader(driver.spec_dir), Provenance("manual__x", "local")).runs.to_pylist()
    assert [(r["status"], r["completed"], r["failed"]) for r in rows] == [("errors", 18, 2)] * 3


# ---- the server container dies in a benchmark pod (kubernetes mode) --------------------------------


class _ServerDiedAPI(FakeKubeAPI):
    """The API stand-in, with a server sidecar that was OOM-killed once and restarted by the kubelet."""

    died_log: ClassVar[list[str]] = [f"INFO step {i}" for i in range(40)] + ["ERROR engine core died"]

    def _status(self, key: tuple[str, str]) -> dict[str, Any]:
        status = super()._status(key)
        for container in status.get("initContainerStatuses", []):
            if container["name"] == "server":
                container["restartCount"] = 1
                container["lastState"] = {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "OOMKilled",
                        "startedAt": "2026-11-30T06:00:00Z",
                    }
                }
        return status

    async def _log(self, request: Any) -> Any:
        from aiohttp import web

        if request.query.get("container") != "server":
            return await super()._log(request)
        self._record(request)
        previous = request.query.get("previous", "").lower() in ("1", "t", "true")  # Go ParseBool
        lines = self.died_log if previous else ["INFO restarted"]
        tail = int(request.query.get("tailLines", 0))
        return web.Response(text="".join(f"{line}\n" for line in (lines[-tail:] if tail else lines)))


def test_the_pod_reads_how_its_server_died_before_the_pod_is_deleted(tmp_path: Path) -> None:
    from accelbench.airflow.benchmark_pod import BenchmarkPod
    from accelbench.campaign.plan import plan_campaign
    from accelbench.campaign.request import CampaignRequest
    from accelbench.loadgen.driver import SERVER_LOG_TAIL_LINES
    from accelbench.sizing.model_config import load_model_shape

    from tests.support.planning import CATALOG, STORE

    req = CampaignRequest(instance_types=["m8g.xlarge"], model="local/tiny-llama", runtime="vllm-cpu")
    plan = plan_campaign(req, CATALOG, "0.19.1", "c-1", load_shape=lambda m: load_model_shape(m, STORE))
    with _ServerDiedAPI() as fake:
        op = BenchmarkPod(
            task_id="bench",
            group=ServerGroup(specs=(plan.specs[0],)),
            config_file=str(fake.kubeconfig(tmp_path / "kubeconfig")),
            lake_uri="s3://lake-bucket/accelbench",
        )
        pod = op.pod_manager.create_pod(op.build_pod_request_obj())
        with pytest.raises(Exception, match="returned a failure"):  # its load generator never finished
            op.cleanup(pod, op.pod_manager.read_pod(pod))
        assert not fake.pods  # deleted, after the server's status and log were read
        logs = [p for m, p in fake.calls if p.endswith("/log")]
    assert op.server_death["server_exit_code"] == 137
    tail = op.server_death["server_log_tail"].splitlines()
    # The log of the instance that died (not the restarted one), its last lines, then the kubelet's word.
    assert tail[-2:] == [
        "ERROR engine core died",
        "kubelet: container server terminated, exit code 137, reason OOMKilled",
    ]
    assert len(tail) == SERVER_LOG_TAIL_LINES and "INFO restarted" not in tail
    # Two reads of the server's log: its head, for what it served (this one says nothing of it), and the
    # dead instance's tail.
    assert len(logs) == 2 and op.served == {}


def test_server_termination_reads_a_restart_or_a_nonzero_exit_only() -> None:
    from accelbench.airflow.benchmark_pod import server_termination
    from kubernetes.client import models as k8s

    def pod(restarts: int, state: dict[str, Any], last: dict[str, Any] | None = None) -> k8s.V1Pod:
        status = k8s.V1ContainerStatus(
            name="server",
            image="x",
            image_id="x",
            ready=False,
            restart_count=restarts,
            state=k8s.V1ContainerState(**state),
            last_state=k8s.V1ContainerState(**(last or {})),
        )
        return k8s.V1Pod(status=k8s.V1PodStatus(init_container_statuses=[status]))

    running = {"running": k8s.V1ContainerStateRunning()}
    oom = {"terminated": k8s.V1ContainerStateTerminated(exit_code=137, reason="OOMKilled")}
    clean = {"terminated": k8s.V1ContainerStateTerminated(exit_code=0, reason="Completed")}
    assert server_termination(pod(0, running), "server") is None
    assert server_termination(pod(0, clean), "server") is None  # stopped at the pod's end
    assert server_termination(pod(0, oom), "server") == (oom["terminated"], False)
    assert server_termination(pod(2, clean, last=oom), "server") == (oom["terminated"], True)
    assert server_termination(pod(0, running), "base") is None


def test_the_pods_server_death_lands_on_the_failed_level_only(tmp_path: Path) -> None:
    from accelbench import __version__
    from accelbench.core.spec import BenchmarkSpec, LoadPlan
    from accelbench.lake.raw import ENVELOPE
    from accelbench.loadgen.driver import LevelRecord
    from accelbench.local.tiny_model import server_spec

    plan = LoadPlan(input_len=8, output_len=8, concurrency=(1, 2, 4))
    spec = BenchmarkSpec(server=server_spec("m"), load=plan, campaign_id="pod-death")
    started = datetime.now(UTC).isoformat()
    levels = [
        LevelRecord(f"pod-death/{spec.spec_id}/c{c}-r0", "concurrency", c, 0, 0, status, started_at=started)
        for c, status in ((1, "ok"), (2, "errors"), (4, "failed"))
    ]
    envelope = {"spec": spec.model_dump(mode="json"), "spec_id": spec.spec_id, "attempt": "a-1"}
    envelope |= {"server": {}, "loadgen_version": __version__, "levels": [asdict(r) for r in levels]}
    spec_dir = tmp_path / "raw"
    spec_dir.mkdir()
    (spec_dir / ENVELOPE).write_text(json.dumps(envelope))
    lake = Lake(str(tmp_path / "lake"))
    where = RawLocation("cpu", DATE, spec.campaign_id, spec.spec_id)
    upload_raw(lake, spec_dir, where)
    hints = {"node": "ip-10-0-7-21", "server_exit_code": 137, "server_log_tail": "kubelet: OOMKilled\n"}
    ingest_raw(lake, where, "manual__pod-death", "a-1", **hints)
    rows = sorted(lake.read("runs").to_pylist(), key=lambda r: r["level_value"])
    assert [(r["status"], r["server_exit_code"], r["server_log_tail"]) for r in rows] == [
        ("ok", None, None),
        ("errors", None, None),
        ("failed", 137, "kubelet: OOMKilled\n"),
    ]
    assert {r["node"] for r in rows} == {"ip-10-0-7-21"}  # provenance hints still reach every row
