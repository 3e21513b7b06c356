"""Task bodies of the per-version campaign and its backfill: the configured matrix at a vLLM CPU version,
less what the lake already holds; then the regression gate."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from accelbench.airflow.dag_defaults import version_matrix
from accelbench.airflow.tasks.common import MODE_CHECKS, catalog_engine, fail_on_library_error
from accelbench.campaign import service
from accelbench.campaign.matrix import matrix_keys
from accelbench.campaign.prepare import Prepared
from accelbench.catalog.decisions import decisions, record
from accelbench.config import Settings, env_name
from accelbench.core.decisions import Decision, answer, standing, unanswered
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake
from accelbench.report.regressions import regression_keys
from accelbench.tiers import CPU

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
    return [spec.model_dump(mode="json") for spec in planned.specs]


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
    import json

    settings = Settings.from_env("regression_notifier", "regression_notifier_kwargs")
    spec = settings.regression_notifier
    if not spec:
        return None
    module, _, name = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(NOTIFIER_SETTING, spec, f"cannot import it ({exc})") from None
    raw = settings.regression_notifier_kwargs

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


@fail_on_library_error
def regression_gate(version: str, context: dict[str, Any], fail: bool | None = None) -> dict[str, Any]:
    """Compare `version` with its neighbours (the versions measured just before and after it) on every
    point of the configured matrix; log the regressions, write a report that lists them, call the
    notifier, and fail with ACCELBENCH_FAIL_ON_REGRESSION; else return, beside the regressions, whether to
    ask the owner (`ask`: regressions no earlier answer covers), what to show them (`body`) and the answer
    that stands (`answer`), for the approval step (accelbench.airflow.approval). Also records the version as
    benchmarked in the catalog."""
    from airflow.sdk.exceptions import AirflowFailException

    from accelbench.airflow.tasks.releases import mark
    from accelbench.airflow.tasks.report import cross_tier_report
    from accelbench.campaign.plan import parse_request
    from accelbench.catalog.queries import instance_catalog
    from accelbench.core.changes import FDR, MIN_EFFECT
    from accelbench.core.model_origin import model_identity
    from accelbench.report.build import partition_filter
    from accelbench.report.gate import gate, gate_scope, gated_runs, measured_versions
    from accelbench.report.samples import read_samples
    from accelbench.report.sources import retractions
    from accelbench.runtime.version_rules import check_version

    version = check_version(version, "partition_key")
    notifier = _notifier()  # a bad setting fails now, not at the first regression
    fail = Settings.from_env("fail_on_regression").fail_on_regression if fail is None else fail
    mark(version, "benchmarked")
    matrix = parse_request(version_matrix())
    # The rows name a model by its id (a local folder by the id its provenance gives), the gate too.
    model, tier = model_identity(matrix.model).model_id, CPU.name  # the vLLM CPU versions are gated
    lake, scope = Lake.from_env(), gate_scope(model, tier)
    scoped = lake.read("runs", where=partition_filter(scope)).to_pylist()
    with catalog_engine() as engine:  # the matrix's points at the versions measured: the gate compares those
        answers = decisions(engine, CPU.runtime)
        # A rejected version is no other version's baseline: the next one is compared with the last good one.
        rejected = {d.version for d in answers if d.model == model and d.decision == "rejected"} - {version}
        if rejected:
            log.info(
                "regression gate: rejected versions are not compared with: %s", ", ".join(sorted(rejected))
            )
        scoped = [r for r in scoped if r["vllm_version"] not in rejected]
        planned = matrix_keys(matrix, instance_catalog(engine), measured_versions(scoped))
        # The gated runs' requests: each percentile is tested from the requests of every repeat.
        gated = [r["run_id"] for r in gated_runs(scoped, planned)]
        samples = read_samples(lake, gated, partition_filter(scope, rows=False))
        verdict = gate(scoped, model, planned, retractions(engine), version, samples)
    for unplanned, why in sorted(verdict.unplanned.items()):
        log.info("regression gate: the matrix does not plan at %s (%s): not compared", unplanned, why)
    if verdict.undecided:  # more repeats or prompts per level would decide these
        log.info("regression gate: undecided at %s:\n%s", version, "\n".join(verdict.undecided))
    report = cross_tier_report({"models": [model], "tiers": [tier]})
    result: dict[str, Any] = {"version": version, "model": model, "report": report["html"], "ask": []}
    if not verdict.regressions:
        log.info(
            "regression gate: vLLM CPU %s has no regression beyond %.0f%% at FDR %g (%s)",
            version,
            MIN_EFFECT * 100,
            FDR,
            matrix.model,
        )
        return result | {"regressions": []}
    lines = verdict.lines
    result |= {"regressions": lines}
    now = standing(answers, model, version)
    ask = unanswered([k for r in verdict.regressions for k in regression_keys(r)], answers, model, version)
    if now is not None and not ask:  # rejected, or every regression accepted as known: asked already
        log.warning(
            "regression gate: %d regression(s), answered: %s\n%s", len(lines), now.text(), "\n".join(lines)
        )
        return result | {"answer": now.text()}
    text = (
        f"vLLM CPU {version}: {len(lines)} regression(s) beyond {MIN_EFFECT:.0%} at a false discovery rate"
        f" of {FDR:g}\n" + "\n".join(lines)
    )
    log.warning("regression gate: %s\nreport: %s", text, report["html"])
    if notifier is not None:
        notifier(context | {"accelbench_regressions": text, "accelbench_report": report["html"]})
        log.info("regression gate: notified %s", Settings.from_env("regression_notifier").regression_notifier)

    if fail:
        raise AirflowFailException(text)
    body = "\n".join(f"- {line}" for line in lines)
    return result | {"ask": ask, "body": f"{text.splitlines()[0]}:\n\n{body}\n\nReport: {report['html']}"}


@fail_on_library_error
def record_decision(gate: dict[str, Any], response: dict[str, Any], dag_run_id: str) -> dict[str, Any]:
    """The approval step's answer into the catalog (`accelbench.catalog.decisions`); a rejected version fails
    the run, with the owner's reason, once: its later campaigns skip it."""
    from datetime import UTC
    from datetime import datetime as clock

    from airflow.sdk.exceptions import AirflowFailException

    kind, reason = answer(
        response.get("chosen_options") or [], (response.get("params_input") or {}).get("reason")
    )
    user = response.get("responded_by_user") or {}
    decision = Decision(
        CPU.runtime,
        gate["version"],
        gate["model"],
        kind,
        reason,
        tuple(gate["ask"]),
        user.get("name") or user.get("id"),
        clock.now(UTC),
        dag_run_id,
    )
    with catalog_engine() as engine:
        record(engine, decision)
    log.info("recorded in the catalog: %s (%d regression(s))", decision.text(), len(decision.regressions))
    if kind == "rejected":
        raise AirflowFailException(f"{decision.text()}; its campaigns skip it from now on unless forced")
    return {"decision": kind, "reason": reason, "decided_by": decision.decided_by}
