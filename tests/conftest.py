"""Shared fixtures: an Airflow home per session, catalogs on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DAGS = REPO / "dags"

# Airflow reads its configuration at import: point it at a private home before anything imports it.
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="accelbench-airflow-"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(_AIRFLOW_HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
    }
)
# No test may reach real AWS: no credentials unless a test points boto3 at a local server.
for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
    os.environ.pop(var, None)
os.environ["AWS_CONFIG_FILE"] = os.devnull
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

from tests.servers import MotoServer, PostgresServer  # noqa: E402


@pytest.fixture(autouse=True)
def accelbench_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ACCELBENCH_HOME and no inherited ACCELBENCH_* settings."""
    for key in list(os.environ):
        if key.startswith("ACCELBENCH_"):
            monkeypatch.delenv(key)
    home = tmp_path / "accelbench-home"
    monkeypatch.setenv("ACCELBENCH_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test against the embedded SQLite catalog and a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    server: PostgresServer = request.getfixturevalue("pg_server")
    return server.create_database("t_" + uuid.uuid4().hex[:12])


@pytest.fixture
def engine(catalog_url: str):  # type: ignore[no-untyped-def]
    from accelbench.catalog.db import make_engine, migrate

    eng = make_engine(catalog_url)
    migrate(eng)
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    server = MotoServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aws_on_moto(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """Credentials and endpoints that send every boto3 call to the local moto server."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.endpoint)
    return moto_server


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """A migrated Airflow metadata database (SQLite) for DagBag and dag.test()."""
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True, env=os.environ
    )
    return _AIRFLOW_HOME


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI a run in which no test passed is a failure, even if pytest would call it clean."""
    from tests.servers import IN_CI

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter else 0
    if IN_CI and passed == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The vLLM CPU environment (scripts/vllm-env.sh), which test.sh creates."""
    from tests.servers import missing

    python = REPO / ".venv-vllm" / "bin" / "python"
    if not python.is_file():
        missing("the vLLM CPU environment .venv-vllm (scripts/vllm-env.sh)")
    return python


@pytest.fixture(scope="session")
def tiny_model(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-layer Llama with random weights and a locally trained tokenizer, built once per session."""
    out = tmp_path_factory.mktemp("tiny-model")
    env = os.environ | {"PYTHONPATH": str(REPO / "plugins")}
    subprocess.run(
        [str(vllm_python), "-m", "accelbench.execution.tiny_model", str(out)],
        check=True,
        capture_output=True,
        env=env,
    )
    return out


@pytest.fixture(scope="session")
def driven(tiny_model: Path, vllm_python: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One real driver run (2 concurrency levels x 2 repeats) against a real server, shared by tests."""
    from accelbench.execution.local_server import LocalServer, Pinning
    from accelbench.loadgen.driver import Driver

    from tests.test_loadgen import spec_for

    spec = spec_for(tiny_model)
    work = tmp_path_factory.mktemp("driven")
    with LocalServer(spec.server, work / "server", python=vllm_python, pinning=Pinning.from_env()) as server:
        driver = Driver(
            spec,
            server.url,
            work / "raw",
            vllm=str(vllm_python.parent / "vllm"),
            server_pid=server.process.pid,
            metrics_interval_s=0.5,
        )
        envelope = driver.run()
    return driver, envelope


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: offline, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
contexts: [{name: offline, context: {cluster: offline, user: offline}}]
current-context: offline
users: [{name: offline, user: {token: offline}}]
"""


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The operator's hook reads a kubeconfig; nothing connects to the (absent) cluster."""
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_text(KUBECONFIG)
    return path


def hub_model(model_dir: Path, where: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """`model_dir` as the model id `local/<name>` in an offline Hugging Face cache (HF_HOME, HF_HUB_OFFLINE
    set), as a benchmark pod finds a model it has downloaded, plus a model store with its config.json.
    Returns (model id, store)."""
    name = model_dir.name
    snapshot = where / "hf" / "hub" / f"models--local--{name}" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for file in model_dir.iterdir():
        (snapshot / file.name).symlink_to(file)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
    store = where / "model-store" / f"local--{name}"
    store.mkdir(parents=True)
    (store / "config.json").write_text((model_dir / "config.json").read_text())
    monkeypatch.setenv("HF_HOME", str(where / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return f"local/{name}", store.parent


@pytest.fixture
def kubernetes_ready(
    aws_on_moto: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[str]:
    """What kubernetes mode's planning checks: an S3 lake (a fresh moto bucket), a load-generator image and
    a Kubernetes connection to the API stand-in. Yields the lake URI."""
    import json

    import boto3

    from tests.kube_api import FakeKubeAPI

    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", f"s3://{bucket}")
    monkeypatch.setenv("ACCELBENCH_LOADGEN_IMAGE", "registry.example.org/accelbench-loadgen:0.1.0")
    with FakeKubeAPI() as fake:
        extra = {"kube_config_path": str(fake.kubeconfig(tmp_path / "kubeconfig"))}
        monkeypatch.setenv(
            "AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps({"conn_type": "kubernetes", "extra": extra})
        )
        yield f"s3://{bucket}"
