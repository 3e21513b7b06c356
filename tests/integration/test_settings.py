"""One Settings for every ACCELBENCH_* variable, and the configuration reference generated from it.

A variable read by hand somewhere, or named in a deployment file or a page without a declaration, fails
here; so does a reference page that no longer matches the declarations.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from accelbench.config import (
    ENV_PREFIX,
    Settings,
    env_name,
    fields,
    read_variable,
    reference_markdown,
)
from accelbench.errors import ConfigError

from tests.support.paths import REPO

PAGE = REPO / "docs" / "reference" / "configuration.md"
GEN = REPO / "scripts" / "gen_reference.py"
NAME = re.compile(r"(?<![A-Za-z0-9_])ACCELBENCH_[A-Z0-9_]*[A-Z0-9]")
# The test suite's own variable (read by tests/, never by the library): documented in DEVELOPING.md.
TEST_ONLY = {"ACCELBENCH_TEST_ARTIFACTS", "ACCELBENCH_TEST_LANES", "ACCELBENCH_TEST_STEPS"}


def gen_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", GEN)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def declared() -> set[str]:
    return {env_name(name) for name in fields()}


def named_in(*roots: str, suffixes: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Every ACCELBENCH_* name in the files under `roots` (those ending in `suffixes`, if given)."""
    found: dict[str, set[str]] = {}
    for root in roots:
        paths = [REPO / root] if (REPO / root).is_file() else sorted((REPO / root).rglob("*"))
        for path in paths:
            if not path.is_file() or "egg-info" in str(path) or "__pycache__" in path.parts:
                continue
            if suffixes and not path.name.endswith(suffixes):
                continue
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            for name in NAME.findall(text):
                found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


# ---- one declaration for every variable -----------------------------------------------------------


def test_every_variable_the_code_names_is_a_settings_field() -> None:
    names = named_in("plugins", "dags", suffixes=(".py",))
    undeclared = {name: where for name, where in names.items() if name not in declared()}
    assert not undeclared, f"read by hand, not declared in accelbench.config.Settings: {undeclared}"
    assert len(names) >= 10  # the scan sees the code (a broken pattern would pass vacuously)


def test_every_variable_deployments_and_pages_name_is_a_settings_field() -> None:
    names = named_in("infra", "docker", "scripts", "docs", "README.md", "DEVELOPING.md")
    undeclared = {n: where for n, where in names.items() if n not in declared() | TEST_ONLY}
    assert not undeclared, f"named but not declared in accelbench.config.Settings: {undeclared}"


def test_the_code_reads_no_accelbench_variable_by_hand() -> None:
    """Only accelbench.config reads the environment for ACCELBENCH_* (AWS_* endpoints are boto3's)."""
    reading = re.compile(
        r"os\.environ(\.get)?\s*[\[(]\s*(['\"]ACCELBENCH_|\w*(SETTING|_ENV)\b)|os\.getenv|ENV_PREFIX\s*\+"
    )
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for root in ("plugins/accelbench", "dags")
        for path in sorted((REPO / root).rglob("*.py"))
        if path.parent != REPO / "plugins/accelbench/config"  # the settings package: it declares them
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if reading.search(line)
    ]
    assert not offenders, offenders


def test_a_constant_cannot_name_an_undeclared_variable() -> None:
    assert env_name("loadgen_image") == "ACCELBENCH_LOADGEN_IMAGE"
    with pytest.raises(KeyError, match="not a field"):
        env_name("loadgen_imag")


def test_every_field_has_a_description_and_a_group() -> None:
    for name, field in fields().items():
        assert field.description, name
        extra = field.json_schema_extra
        assert isinstance(extra, dict) and extra.get("group"), name


def test_the_operator_set_variables_are_declared_and_say_so() -> None:
    from accelbench.loadgen import contract

    names = [contract.SPEC_ENV, contract.SERVER_URL_ENV, contract.LAKE_DATE_ENV, contract.NODE_NAME_ENV]
    for name in [*names, contract.ATTEMPT_ENV]:
        field = fields()[name.removeprefix(ENV_PREFIX).lower()]
        assert "set by the benchmark operator" in str(field.description), name


# ---- the reference page ---------------------------------------------------------------------------


def test_the_configuration_page_holds_the_generated_reference() -> None:
    body = gen_reference().section_body(PAGE.read_text(), "settings")
    assert body == reference_markdown(), "stale: run .venv/bin/python scripts/gen_reference.py"
    for name in declared():
        assert f"| `{name}` |" in body, name


def test_the_reference_does_not_depend_on_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    before = reference_markdown()
    monkeypatch.setenv("ACCELBENCH_HOME", "/elsewhere")
    monkeypatch.setenv("ACCELBENCH_REGIONS", "eu-west-1")
    assert reference_markdown() == before


def test_gen_reference_rewrites_a_stale_section_and_check_says_so(tmp_path: Path) -> None:
    gen = gen_reference()
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\nprose\n\n<!-- generated:demo -->\nold\n<!-- /generated:demo -->\n\nmore prose\n"
    )
    sections = [gen.Section(Path("page.md"), "demo", lambda: "| a | b |\n")]
    assert gen.stale(sections, tmp_path) == ["page.md#demo"]
    assert gen.write(sections, tmp_path) == ["page.md#demo"]
    assert page.read_text() == (
        "# Title\n\nprose\n\n<!-- generated:demo -->\n| a | b |\n<!-- /generated:demo -->\n\nmore prose\n"
    )
    assert gen.stale(sections, tmp_path) == []
    page.write_text("no markers\n")
    with pytest.raises(ValueError, match="generated:demo"):
        gen.stale(sections, tmp_path)


def test_gen_reference_check_passes_on_the_repository() -> None:
    result = subprocess.run(
        [sys.executable, str(GEN), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


# ---- reading ----------------------------------------------------------------------------------------


def test_defaults_live_under_the_home(accelbench_env: Path) -> None:
    settings = Settings.from_env()
    assert settings.library.home == settings.catalog.home == settings.lake.home == accelbench_env
    assert settings.catalog.catalog_url == f"sqlite:///{accelbench_env / 'catalog.db'}"
    assert settings.lake.import_roots == (accelbench_env / "import",)
    assert settings.lake.lake_location == str(accelbench_env / "lake")
    assert settings.aws.regions == ("us-east-1",) and settings.library.execution_mode == "local"
    assert (
        settings.kubernetes.pod_schedule_timeout_s == 600
        and settings.airflow.benchmark_pool == "default_pool"
    )


def test_each_call_reads_the_environment_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().aws.offline is False
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "yes")
    monkeypatch.setenv("ACCELBENCH_REGIONS", " us-east-1, eu-west-1 ,")
    monkeypatch.setenv("ACCELBENCH_REGISTRY_URL", "http://127.0.0.1:5000/")
    settings = Settings.from_env()
    assert settings.aws.offline is True and settings.aws.regions == ("us-east-1", "eu-west-1")
    assert settings.releases.registry_url == "http://127.0.0.1:5000"


def test_empty_values_count_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELBENCH_BENCHMARK_POOL", " ")
    monkeypatch.setenv("ACCELBENCH_POD_SCHEDULE_TIMEOUT_S", "")
    monkeypatch.setenv("ACCELBENCH_AWS_CONN_ID", "")
    settings = Settings.from_env()
    assert (
        settings.airflow.benchmark_pool == "default_pool"
        and settings.kubernetes.pod_schedule_timeout_s == 600
    )
    assert settings.aws.aws_conn_id == "aws_default"


@pytest.mark.parametrize(
    ("variable", "value", "why"),
    [
        ("ACCELBENCH_OFFLINE", "maybe", "expected one of 1/0"),
        ("ACCELBENCH_AWS_MAX_ATTEMPTS", "eight", "not an integer"),
        ("ACCELBENCH_POD_SCHEDULE_TIMEOUT_S", "0", "must be at least 1"),
        ("ACCELBENCH_POD_SCHEDULE_TIMEOUT_S", "ten", "not an integer"),
        ("ACCELBENCH_EXECUTION_MODE", "k8s", "one of local, kubernetes"),
        ("ACCELBENCH_REGIONS", " , ", "names no region"),
        ("ACCELBENCH_FAIL_ON_REGRESSION", "sometimes", "expected one of 1/0"),
    ],
)
def test_a_bad_value_fails_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, why: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=f"{variable}=.*{re.escape(why)}") as err:
        Settings.from_env()
    assert err.value.field == variable


def test_a_reader_of_one_setting_is_not_failed_by_another(monkeypatch: pytest.MonkeyPatch) -> None:
    """DAG files read single settings at parse time: a bad unrelated value must not break them."""
    from accelbench.core.modes import default_mode
    from accelbench.k8s.pod import schedule_timeout_s

    monkeypatch.setenv("ACCELBENCH_POD_SCHEDULE_TIMEOUT_S", "soon")
    monkeypatch.setenv("ACCELBENCH_EXECUTION_MODE", "kubernetes")
    assert default_mode() == "kubernetes"
    assert Settings.from_env("execution_mode", "regions").aws.regions == ("us-east-1",)
    with pytest.raises(ConfigError, match="ACCELBENCH_POD_SCHEDULE_TIMEOUT_S"):
        schedule_timeout_s()
    with pytest.raises(KeyError, match="not a setting: nope"):
        Settings.from_env("nope")


def test_read_variable_by_its_full_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELBENCH_DEFAULT_MODEL", "org/model")
    assert read_variable("ACCELBENCH_DEFAULT_MODEL") == "org/model"
    assert read_variable("ACCELBENCH_EXECUTION_MODE") == "local"
    with pytest.raises(KeyError):
        read_variable("ACCELBENCH_NOPE")


def test_a_stand_alone_load_generator_records_no_execution_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, the load generator says `standalone`; the pod's operator sets `kubernetes`."""
    from accelbench.loadgen.contract import LOADGEN_SETTINGS

    assert "execution_mode" not in Settings.from_env(*LOADGEN_SETTINGS).library.model_fields_set
    monkeypatch.setenv("ACCELBENCH_EXECUTION_MODE", "kubernetes")
    assert "execution_mode" in Settings.from_env(*LOADGEN_SETTINGS).library.model_fields_set


def test_settings_are_nested_by_concern_and_each_tier_has_its_own_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`settings.catalog`, `settings.kubernetes`, ... and `settings.tier(name)` for each registered tier; the
    variables keep the flat names users set."""
    from accelbench import tiers

    monkeypatch.setenv("ACCELBENCH_VLLM_GPU_IMAGE_REPOSITORY", "mirror.example/vllm-openai")
    monkeypatch.setenv("ACCELBENCH_LOADGEN_IMAGE", "registry.example/loadgen:1")
    settings = Settings.from_env()
    assert set(settings.tiers) == set(tiers.names())
    assert settings.tier("gpu").vllm_gpu_image_repository == "mirror.example/vllm-openai"  # type: ignore[attr-defined]
    assert settings.kubernetes.loadgen_image == "registry.example/loadgen:1"
    assert settings.value("vllm_gpu_image_repository") == "mirror.example/vllm-openai"
    assert tiers.GPU.recipe.image("0.19.1") == "mirror.example/vllm-openai:v0.19.1"
    for tier in tiers.all_tiers():
        assert tier.settings is not None and type(settings.tier(tier.name)) is tier.settings
        for name in tier.settings.model_fields:
            assert f"| `{env_name(name)}` |" in reference_markdown(), name
