"""Task body of the per-version campaign: the configured matrix at the run's vLLM CPU version."""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException
from packaging.version import InvalidVersion, Version

from accelbench.airflow.dag_defaults import VERSION_MATRIX_SETTING, VERSION_PATTERN, version_matrix
from accelbench.airflow.tasks import _fail_on_library_error, catalog_engine, plan_benchmarks
from accelbench.core.spec import BenchmarkSpec
from accelbench.errors import ConfigError
from accelbench.lake.measured import measured_specs
from accelbench.lake.store import Lake
from accelbench.report.model import Retraction
from accelbench.report.sources import retractions

log = logging.getLogger(__name__)


def check_version(version: str | None, field: str = "partition_key") -> str:
    """A vLLM CPU version as the lake and the image tag spell it: `0.19.0` (a leading v dropped)."""
    if not version or not re.fullmatch(VERSION_PATTERN, version):
        raise ConfigError(field, version, "not a vLLM CPU version (e.g. 0.19.0)")
    try:
        Version(version)
    except InvalidVersion:
        raise ConfigError(field, version, "not a PEP 440 version") from None
    return version.removeprefix("v")


def _retractions() -> list[Retraction]:
    """Retracted runs never count as measured (nor in the gate): they were withdrawn for a reason."""
    with catalog_engine() as engine:
        return retractions(engine)


@_fail_on_library_error
def plan_version_campaign(
    version: str | None,
    execution_mode: str,
    force: bool,
    campaign_id: str,
    as_of: datetime | None,
) -> list[dict[str, Any]]:
    """Plan ACCELBENCH_VERSION_MATRIX at `version` (the run's partition key); specs the lake already
    holds complete for this matrix are left out, and the run skips when all are, unless forced."""
    version = check_version(version)
    request = version_matrix() | {"version": version, "execution_mode": execution_mode}
    log.info("vLLM CPU %s with the matrix of %s: %s", version, VERSION_MATRIX_SETTING, request)
    planned = plan_benchmarks(request, campaign_id, as_of)
    specs = [BenchmarkSpec.model_validate(s) for s in planned]
    retracted = {r.run_id for r in _retractions()}
    done = {s.matrix_key for s in measured_specs(Lake.from_env(), specs, retracted)}
    if force:
        if done:
            log.info("force: measuring again %d specs the lake already holds", len(done))
        return planned
    for spec in specs:
        if spec.matrix_key in done:
            log.info(
                "skipped %s: vLLM CPU %s was already measured with this matrix (matrix_key %s); "
                "send force=true to measure again",
                spec.server.instance_type,
                version,
                spec.matrix_key,
            )
    todo = [s for s, spec in zip(planned, specs, strict=True) if spec.matrix_key not in done]
    if not todo:
        raise AirflowSkipException(
            f"vLLM CPU {version} was already measured with this matrix: nothing to do "
            "(force=true measures again)"
        )
    return todo


def versions_to_request(versions: list[str], execution_mode: str, force: bool) -> list[str]:
    """Of the requested versions, those a version campaign would measure: the others are already in
    the lake with the configured matrix (logged, skipped) unless forced. Any planning problem of a
    version fails the whole request before anything is announced."""
    todo = []
    for version in dict.fromkeys(versions):
        try:
            plan_version_campaign(version, execution_mode, force, "backfill-check", None)
        except AirflowSkipException as skip:
            log.info("not requested: %s", skip)
            continue
        todo.append(version)
    if not todo:
        raise AirflowSkipException(
            f"every requested version ({', '.join(versions)}) was already measured with this matrix"
        )
    log.info("requesting version campaigns for %s", ", ".join(todo))
    return todo


NOTIFIER_SETTING = "ACCELBENCH_REGRESSION_NOTIFIER"
NOTIFIER_KWARGS_SETTING = "ACCELBENCH_REGRESSION_NOTIFIER_KWARGS"
FAIL_SETTING = "ACCELBENCH_FAIL_ON_REGRESSION"


def _notifier() -> Any:
    """ACCELBENCH_REGRESSION_NOTIFIER = "module:Name": an Airflow notifier class (instantiated with
    the JSON kwargs of ACCELBENCH_REGRESSION_NOTIFIER_KWARGS) or a callable taking the context."""
    import importlib
    import json
    import os

    spec = os.environ.get(NOTIFIER_SETTING, "").strip()
    if not spec:
        return None
    module, _, name = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(NOTIFIER_SETTING, spec, f"cannot import it ({exc})") from None
    raw = os.environ.get(NOTIFIER_KWARGS_SETTING, "").strip() or "{}"
    try:
        kwargs = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(NOTIFIER_KWARGS_SETTING, raw, f"not JSON ({exc})") from None
    if not isinstance(kwargs, dict):
        raise ConfigError(NOTIFIER_KWARGS_SETTING, raw, "a JSON object of keyword arguments")
    if not isinstance(target, type):
        return target
    try:
        return target(**kwargs)
    except TypeError as exc:
        raise ConfigError(NOTIFIER_KWARGS_SETTING, raw, f"{spec} refused them ({exc})") from None


def _matrix_keys(versions: set[str]) -> set[str]:
    """matrix_key of every spec of the configured matrix, planned at each of `versions`: the gate
    compares exactly the points a version campaign measures, never other loads of the same model."""
    from accelbench.campaign.planner import parse_request, plan_campaign
    from accelbench.campaign.problems import PlanningError
    from accelbench.catalog import queries

    request = parse_request(version_matrix())
    with catalog_engine() as engine:
        catalog = {s.instance_type: s for s in queries.instance_specs(engine)}
    keys: set[str] = set()
    for version in sorted(versions):
        try:
            keys |= {spec.matrix_key for spec in plan_campaign(request, catalog, version, "gate").specs}
        except PlanningError as exc:
            log.info("regression gate: the matrix does not plan at %s (%s): not compared", version, exc)
    return keys


@_fail_on_library_error
def regression_gate(version: str, context: dict[str, Any], fail: bool | None = None) -> dict[str, Any]:
    """Compare `version` with its neighbours (the versions measured just before and after it) on every
    point of the configured matrix; log the regressions, write a report that lists them, call the
    notifier, optionally fail. Also records the version as benchmarked in the catalog."""
    import os

    from airflow.sdk.exceptions import AirflowFailException

    from accelbench.airflow.release_tasks import mark
    from accelbench.airflow.report_tasks import cross_tier_report
    from accelbench.config import parse_bool
    from accelbench.report.build import ReportFilter, build_report, partition_filter
    from accelbench.report.regressions import describe, regressions_of

    version = check_version(version)
    notifier = _notifier()  # a bad setting fails now, not at the first regression
    fail = parse_bool(FAIL_SETTING, os.environ.get(FAIL_SETTING, "false")) if fail is None else fail
    mark(version, "benchmarked")
    model = version_matrix()["model"]
    scope = ReportFilter(models=[model], tiers=["cpu"])
    lake = Lake.from_env()
    scoped = lake.read("runs", where=partition_filter(scope)).to_pylist()
    keys = _matrix_keys({r["vllm_version"] for r in scoped if r["vllm_version"]})
    runs = [r for r in scoped if r["matrix_key"] in keys]  # the version matrix only, never other loads
    points = build_report(runs, [], _retractions(), scope)["points"]
    found = regressions_of(points, version)
    report = cross_tier_report({"models": [model], "tiers": ["cpu"]})
    lines = [describe(r) for r in found]
    if not found:
        log.info("regression gate: vLLM CPU %s has no regression beyond noise (%s)", version, model)
        return {"version": version, "regressions": [], "report": report["html"]}
    text = f"vLLM CPU {version}: {len(found)} regression(s) beyond run-to-run noise\n" + "\n".join(lines)
    log.warning("regression gate: %s\nreport: %s", text, report["html"])
    if notifier is not None:
        notifier(context | {"accelbench_regressions": text, "accelbench_report": report["html"]})
        log.info("regression gate: notified %s", os.environ.get(NOTIFIER_SETTING))
    if fail:
        raise AirflowFailException(text)
    return {"version": version, "regressions": lines, "report": report["html"]}
