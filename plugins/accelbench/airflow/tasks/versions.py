"""Task bodies of the per-version campaign and its backfill: the configured matrix at a vLLM CPU version,
less what the lake already holds; then the regression gate."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from accelbench.airflow.dag_defaults import version_matrix
from accelbench.airflow.notify import announce
from accelbench.airflow.tasks.common import MODE_CHECKS, catalog_engine, fail_on_library_error
from accelbench.campaign import service
from accelbench.campaign.prepare import Prepared
from accelbench.config import Settings, env_name
from accelbench.core.server_group import group_specs
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake

log = logging.getLogger(__name__)


def _plan_version(
    version: str | None, execution_mode: str, force: bool, campaign_id: str, as_of: datetime | None
) -> Prepared:
    """The version matrix at `version` (accelbench.campaign.service); a rejected version skips."""
    outcome = service.plan_version(
        version_matrix(), version, execution_mode, force, campaign_id, as_of, catalog_engine, MODE_CHECKS
    )
    if outcome.planned is None:
        raise AirflowSkipException(outcome.skip)
    return outcome.planned


@fail_on_library_error
def plan_version_campaign(
    version: str | None,
    execution_mode: str,
    force: bool,
    campaign_id: str,
    as_of: datetime | None,
) -> list[dict[str, Any]]:
    """Plan ACCELBENCH_VERSION_MATRIX at `version` (the run's partition key); specs the lake already
    holds complete for this matrix are left out, and the task skips when all are, unless forced."""
    planned = _plan_version(version, execution_mode, force, campaign_id, as_of)
    if planned.already_measured:  # the plan task shows skipped, and so do the tasks mapped over it
        raise AirflowSkipException(
            f"vLLM CPU {planned.version} was already measured with this matrix: nothing to do "
            "(force=true measures again)"
        )
    return [group.model_dump(mode="json") for group in group_specs(planned.specs)]


@fail_on_library_error
def versions_to_request(versions: list[str], execution_mode: str, force: bool) -> list[str]:
    """Of the requested versions, those a version campaign would measure: the others are already in
    the lake with the configured matrix (logged, left out) unless forced. Any planning problem of a
    version fails the whole request before anything is announced."""
    todo = []
    for version in dict.fromkeys(versions):
        try:
            planned = _plan_version(version, execution_mode, force, "backfill-check", None)
        except AirflowSkipException as skipped:  # a rejected version
            log.info("not requested: %s", skipped)
            continue
        if planned.already_measured:
            log.info("not requested: vLLM CPU %s was already measured with this matrix", planned.version)
            continue
        todo.append(version)
    if not todo:
        raise AirflowSkipException(
            f"every requested version ({', '.join(versions)}) was already measured with this matrix"
        )
    log.info("requesting version campaigns for %s", ", ".join(todo))
    return todo


NOTIFIER_SETTING = env_name("regression_notifier")
NOTIFIER_KWARGS_SETTING = env_name("regression_notifier_kwargs")
FAIL_SETTING = env_name("fail_on_regression")


def _notifier() -> Any:
    """ACCELBENCH_REGRESSION_NOTIFIER = "module:Name": an Airflow notifier class (instantiated with
    the JSON kwargs of ACCELBENCH_REGRESSION_NOTIFIER_KWARGS) or a callable taking the context."""
    import importlib

    settings = Settings.from_env("regression_notifier", "regression_notifier_kwargs")
    spec = settings.releases.regression_notifier
    if not spec:
        return None
    module, _, name = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(NOTIFIER_SETTING, spec, f"cannot import it ({exc})") from None
    raw = settings.releases.regression_notifier_kwargs
    kwargs = _notifier_kwargs(raw)
    if not isinstance(target, type):
        return target
    try:
        return target(**kwargs)
    except TypeError as exc:
        raise ConfigError(NOTIFIER_KWARGS_SETTING, raw, f"{spec} refused them ({exc})") from None


def _notifier_kwargs(raw: str) -> dict[str, Any]:
    import json

    try:
        kwargs = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(NOTIFIER_KWARGS_SETTING, raw, f"not JSON ({exc})") from None
    if not isinstance(kwargs, dict):
        raise ConfigError(NOTIFIER_KWARGS_SETTING, raw, "a JSON object of keyword arguments")
    return kwargs


@fail_on_library_error
def regression_gate(version: str, context: dict[str, Any], fail: bool | None = None) -> dict[str, Any]:
    """Gate `version` (accelbench.regression.gate: its neighbours on every point of the configured matrix,
    the report that lists the regressions; it records the version as benchmarked in the catalog), call the
    notifier, and fail with ACCELBENCH_FAIL_ON_REGRESSION; else return, beside the regressions, whether to
    ask the owner (`ask`), what to show them (`body`) and the answer that stands (`answer`), for the
    approval step (accelbench.airflow.approval)."""
    from accelbench.regression import gate
    from accelbench.runtime.version_rules import check_version

    version = check_version(version, "partition_key")
    notifier = _notifier()  # a bad setting fails now, not at the first regression
    fail = Settings.from_env("fail_on_regression").releases.fail_on_regression if fail is None else fail
    outcome = gate.run(Lake.from_env, catalog_engine, version, version_matrix)
    if outcome.asks and notifier is not None:
        notifier(context | {"accelbench_regressions": outcome.text, "accelbench_report": outcome.report})
        log.info(
            "regression gate: notified %s",
            Settings.from_env("regression_notifier").releases.regression_notifier,
        )
    if outcome.asks and outcome.text:
        announce(f"accelbench: {version} regresses", outcome.text.splitlines(), outcome.report or "", context)
    if outcome.asks and fail:
        raise AirflowFailException(outcome.text)
    return outcome.xcom()


@fail_on_library_error
def record_decision(gate: dict[str, Any], response: dict[str, Any], dag_run_id: str) -> dict[str, Any]:
    """The approval step's answer into the catalog (`accelbench.regression.answer`); a rejected version
    fails the run, with the owner's reason, once: its later campaigns skip it."""
    from accelbench.regression.answer import record_answer

    decision = record_answer(catalog_engine, gate, response, dag_run_id)
    if decision.decision == "rejected":
        raise AirflowFailException(f"{decision.text()}; its campaigns skip it from now on unless forced")
    return {"decision": decision.decision, "reason": decision.reason, "decided_by": decision.decided_by}
