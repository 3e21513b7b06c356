"""infra/helm values checked against the official Airflow chart 1.21.0's own schema and defaults.

The chart ignores a key it does not know, so a misspelt key (``createUserJob.enable``) would silently leave
the chart's default on. Each values file is validated alone and deep-merged over the chart's values.yaml (what
Helm validates) against values.schema.json, and against a closed variant of it: the chart leaves some objects
open (the top level, every ``serviceAccount``, ...) though it lists their keys. The chart's templates are not
in the reference folder, so what the chart renders is asserted through the values keys its values.yaml
documents. The reference sits in shared/ beside the repository (missing: a failure in CI, a skip elsewhere).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator, ValidationError, validators

from tests.support.paths import REPO
from tests.support.servers import missing

HELM = REPO / "infra" / "helm"
VALUES_FILES = sorted(HELM.glob("*.yaml"))
OUR_VALUES = HELM / "airflow-values.yaml"
CHART = REPO.parent / "shared" / "reference" / "airflow-helm-chart-1.21.0"
FAB_AUTH_MANAGER = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"
PASSWORD_KEY = re.compile(r"pass(word)?$", re.I)


# ---- the chart's reference data --------------------------------------------------------------


def _chart_file(name: str) -> Path:
    path = CHART / name
    if not path.is_file():
        missing(f"the Airflow Helm chart reference {path} (shared/ beside the repository)")
    return path


@cache
def chart_schema() -> dict[str, Any]:
    return json.loads(_chart_file("values.schema.json").read_text())


@cache
def chart_defaults() -> dict[str, Any]:
    return yaml.safe_load(_chart_file("values.yaml").read_text())


def closed(schema: Any) -> Any:
    """The schema with every object that lists its properties but says nothing of others closed to them.

    Objects that allow other keys on purpose (``additionalProperties: true`` or a schema: labels,
    annotations, the ``config`` sections) stay open.
    """
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) for key, value in schema.items()}
    if isinstance(out.get("properties"), dict) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def validator(schema: dict[str, Any]) -> Draft7Validator:
    """A validator of the draft the schema declares; its $refs point into its own definitions."""
    cls = validators.validator_for(schema)
    assert cls is Draft7Validator, f"the chart's schema moved to {cls.__name__}: check the refs and keywords"
    cls.check_schema(schema)
    return cls(schema)


@cache
def chart_validator() -> Draft7Validator:
    return validator(chart_schema())


@cache
def closed_validator() -> Draft7Validator:
    return validator(closed(chart_schema()))


def errors(doc: dict[str, Any], strict: bool = False) -> list[ValidationError]:
    check = closed_validator() if strict else chart_validator()
    return sorted(check.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))


def describe(found: list[ValidationError]) -> list[str]:
    return [f"{e.json_path}: {e.message}" for e in found]


# ---- Helm's merge --------------------------------------------------------------------------


def helm_merge(defaults: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    """User values over chart defaults as Helm coalesces them.

    Maps merge key by key, recursively; a list or a scalar replaces what was there (also a map: Helm warns
    and keeps the user's value); a null deletes the key, at any depth.
    """
    merged = copy.deepcopy(defaults)
    for key, value in user.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict):
            below = merged.get(key)
            merged[key] = helm_merge(below if isinstance(below, dict) else {}, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), f"{path.relative_to(REPO)} is not a mapping"
    return doc


@cache
def merged_values() -> dict[str, Any]:
    return helm_merge(chart_defaults(), load(OUR_VALUES))


def leaves(doc: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, value) of every scalar, list items numbered."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from leaves(value, (*path, str(key)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from leaves(value, (*path, str(i)))
    else:
        yield path, doc


def test_helm_merge_merges_maps_replaces_lists_and_scalars_and_deletes_nulls() -> None:
    defaults = {"a": {"b": 1, "c": [1, 2], "d": {"e": 1}}, "f": "x", "g": {"h": 1}, "k": 1}
    user = {"a": {"c": [3], "d": {"e": None, "n": None}}, "f": None, "g": 2, "k": {"m": None, "o": 1}}
    assert helm_merge(defaults, user) == {"a": {"b": 1, "c": [3], "d": {}}, "g": 2, "k": {"o": 1}}
    assert defaults["a"]["d"] == {"e": 1}, "the defaults are left as they were"


# ---- the values validate -------------------------------------------------------------------


def test_there_are_helm_values() -> None:
    assert OUR_VALUES in VALUES_FILES


def test_the_chart_defaults_validate_against_the_closed_schema() -> None:
    """Else closing the schema would flag keys the chart itself uses."""
    assert not errors(chart_defaults(), strict=True), describe(errors(chart_defaults(), strict=True))


@pytest.mark.parametrize("path", VALUES_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("strict", [False, True], ids=["chart-schema", "closed-schema"])
def test_helm_values_validate_alone_and_merged_over_the_chart_defaults(path: Path, strict: bool) -> None:
    values = load(path)
    assert not errors(values, strict), describe(errors(values, strict))
    merged = helm_merge(chart_defaults(), values)
    assert not errors(merged, strict), describe(errors(merged, strict))


def _misspell(values: dict[str, Any], dotted: str, wrong: str) -> dict[str, Any]:
    """A copy of the values with the key at ``dotted`` renamed to ``wrong`` (created if absent)."""
    doc = copy.deepcopy(values)
    *parents, last = dotted.split(".")
    node = doc
    for key in parents:
        node = node.setdefault(key, {})
    node[wrong] = node.pop(last, False)
    return doc


def _names(found: list[ValidationError], parent: str, key: str) -> bool:
    return any(
        e.validator == "additionalProperties"
        and ".".join(map(str, e.absolute_path)) == parent
        and f"'{key}'" in e.message
        for e in found
    )


@pytest.mark.parametrize(
    ("dotted", "wrong"),
    [
        ("createUserJob.enabled", "enable"),
        ("workers.resources", "resource"),
        ("redis.enabled", "enable"),
        ("data.metadataSecretName", "metadataSecret"),
        ("images.airflow.repository", "repo"),
    ],
)
def test_a_misspelt_key_fails_and_is_named(dotted: str, wrong: str) -> None:
    values = _misspell(load(OUR_VALUES), dotted, wrong)
    parent = dotted.rsplit(".", 1)[0]
    for doc in (values, helm_merge(chart_defaults(), values)):
        found = errors(doc)
        assert _names(found, parent, wrong), describe(found)


@pytest.mark.parametrize(
    ("dotted", "wrong"),
    [
        ("executor", "executer"),
        ("workers.serviceAccount.name", "nmae"),
        ("apiServer.serviceAccount.create", "crate"),
    ],
)
def test_a_misspelt_key_where_the_chart_schema_is_open_fails_the_closed_schema(
    dotted: str, wrong: str
) -> None:
    """The chart's schema lets these through (its top level and the serviceAccount objects are open)."""
    values = helm_merge(chart_defaults(), _misspell(load(OUR_VALUES), dotted, wrong))
    parent = dotted.rsplit(".", 1)[0] if "." in dotted else ""
    assert not _names(errors(values), parent, wrong), "the chart closed this object: drop it from this test"
    assert _names(errors(values, strict=True), parent, wrong), describe(errors(values, strict=True))


# ---- what the chart creates ------------------------------------------------------------------


def test_the_chart_would_create_the_admin_admin_user_and_redis_by_default() -> None:
    """What the values below turn off, read from the chart's defaults (so the test fails if they change)."""
    defaults = chart_defaults()
    assert defaults["createUserJob"]["enabled"] is True
    assert defaults["createUserJob"]["defaultUser"]["password"] == "admin"
    assert "airflow users create" in "\n".join(defaults["createUserJob"]["args"])
    assert defaults["redis"]["enabled"] is True


def test_merged_values_create_no_default_admin() -> None:
    merged = merged_values()
    assert merged["createUserJob"]["enabled"] is False
    # webserver.defaultUser (deprecated) feeds the same job's arguments and the chart's install notes.
    assert not (merged["webserver"].get("defaultUser") or {}).get("enabled", False)
    for path, value in leaves(load(OUR_VALUES)):
        where = ".".join(path)
        assert "defaultUser" not in path, where
        assert not (PASSWORD_KEY.search(path[-1]) and str(value).strip().lower() == "admin"), where
        # Stronger: no password of any kind is a plain value (passwords come from Secrets).
        assert not (PASSWORD_KEY.search(path[-1]) and value not in (None, "")), f"{where}: a plain password"


def test_merged_values_render_no_redis_and_name_no_broker() -> None:
    """No Redis StatefulSet, no Redis password Secret, no broker URL: the KubernetesExecutor has no broker."""
    merged = merged_values()
    assert merged["executor"] == "KubernetesExecutor"
    assert "Celery" not in merged["executor"]  # the chart's broker-URL Secret and Flower are Celery-only
    redis = merged["redis"]
    assert redis["enabled"] is False
    assert redis.get("password") is None and redis.get("passwordSecretName") is None
    data = merged["data"]
    assert data.get("brokerUrl") is None and data.get("brokerUrlSecretName") is None
    assert merged["flower"]["enabled"] is False


def test_the_first_admin_procedure_matches_the_auth_manager_and_keeps_the_password_off_command_lines() -> (
    None
):
    """infra/README.md makes the first admin with the FAB CLI, there only with the FAB auth manager."""
    merged = merged_values()
    assert merged["config"]["core"]["auth_manager"] == FAB_AUTH_MANAGER
    readme = (REPO / "infra" / "README.md").read_text()
    section = re.split(r"\n#{2,3} ", readme.split("\n### The first admin user\n", 1)[1])[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    command = block.replace("\\\n", " ")
    assert "airflow users create" in command and "--role Admin" in command
    assert not re.search(r"(--password|\s-p)\s", command), "the password must not be an argument"
    secret = re.search(r"create secret generic (\S+) --from-file=password=/dev/stdin", command)
    assert secret, "the password goes from a generator straight into a Secret"
    assert f"get secret {secret[1]} " in command
    assert "exec -i deploy/airflow-api-server -c api-server --" in command


def test_keys_that_must_survive_upgrades_come_from_secrets_the_guide_creates() -> None:
    """Fernet, API and JWT keys: the chart generates them when unset (a new JWT secret on every upgrade);
    ours name Secrets that the EKS guide's step 4 (docs/guides/deploy-on-eks.md) creates, each with the key
    the chart's values.yaml asks for."""
    merged = merged_values()
    guide = (REPO / "docs" / "guides" / "deploy-on-eks.md").read_text()
    for name_key, value_key, data_key in (
        ("fernetKeySecretName", "fernetKey", "fernet-key"),
        ("apiSecretKeySecretName", "apiSecretKey", "api-secret-key"),
        ("jwtSecretName", "jwtSecret", "jwt-secret"),
    ):
        secret = merged[name_key]
        assert secret and merged[value_key] is None, name_key
        assert f"'{data_key}'" in _chart_file("values.yaml").read_text(), (
            data_key
        )  # the key name the chart documents
        assert re.search(rf"create secret generic {secret} \\?\s*--from-literal={data_key}=", guide), secret
