"""The version campaign's matrix: ACCELBENCH_VERSION_MATRIX parsed, the request it makes at one version,
and its matrix keys at any versions (the points the regression gate compares). Rules, not tasks: they
are tested without Airflow."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from accelbench import tiers
from accelbench.campaign.plan import parse_request, plan_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.config import env_name
from accelbench.core.problems import PlanningError
from accelbench.errors import ConfigError
from accelbench.runtime.version_rules import check_version

VERSION_MATRIX_SETTING = env_name("version_matrix")


def parse_version_matrix(raw: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The campaign `defaults`, overridden by the JSON object `raw` (the setting's value; empty: none).
    The planner checks every field when a run starts; here only the shape, naming the setting."""
    raw = raw.strip()
    if not raw:
        return dict(defaults)
    try:
        overrides = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(VERSION_MATRIX_SETTING, raw, f"not JSON ({exc})") from None
    if not isinstance(overrides, dict) or "version" in overrides:
        raise ConfigError(VERSION_MATRIX_SETTING, raw, "a JSON object of campaign params, without version")
    return dict(defaults) | overrides


def matrix_at(
    matrix: Mapping[str, Any], version: str | None, execution_mode: str | None, field: str = "partition_key"
) -> CampaignRequest:
    """The matrix as one campaign's request at `version` (checked, one spelling: `v0.19.0` is 0.19.0)."""
    version = check_version(version, field)
    given = matrix.get("versions")
    versions = (dict(given) if isinstance(given, dict) else {}) | {tiers.CPU.name: version}
    return parse_request(dict(matrix) | {"versions": versions, "execution_mode": execution_mode})


@dataclass(frozen=True)
class MatrixKeys:
    keys: set[str] = field(default_factory=set)
    unplanned: dict[str, str] = field(default_factory=dict)  # version -> why the matrix does not plan at it


def matrix_keys(
    request: CampaignRequest, catalog: Mapping[str, InstanceSpec], versions: Iterable[str]
) -> MatrixKeys:
    """matrix_key of every spec of the matrix planned at each of `versions`: exactly the points a version
    campaign measures, never other loads of the same model. A version it does not plan at is left out."""
    found = MatrixKeys()
    for version in sorted(set(versions)):
        try:
            specs = plan_campaign(request, catalog, version, "gate").specs
        except PlanningError as exc:
            found.unplanned[version] = str(exc)
            continue
        found.keys.update(spec.matrix_key for spec in specs)
    return found
