"""Task bodies of a campaign DAG besides the benchmark itself: plan, ingest one server's workloads, summarise
the run."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from accelbench.airflow.tasks.common import MODE_CHECKS, catalog_engine, fail_on_library_error
from accelbench.campaign import service
from accelbench.campaign.plan import parse_request
from accelbench.core.evidence import GroupSummary
from accelbench.core.server_group import ServerGroup
from accelbench.lake.store import Lake, safe_name
from accelbench.landing import ingest
from accelbench.landing import summary as landing_summary
from accelbench.landing.capacity import capacity_text as capacity_text  # re-exported
from accelbench.report.sources import price_history


def campaign_id(dag_id: str, run_id: str) -> str:
    """Stable for a DAG run: a retried or cleared task writes the same lake files."""
    return safe_name(f"{dag_id}.{run_id}")


@fail_on_library_error
def plan_benchmarks(
    params: dict[str, Any], campaign_id: str, as_of: datetime | None = None, scheduled: bool = False
) -> list[dict[str, Any]]:
    """First task of a campaign: every problem fails it, with the text naming each field.

    `scheduled`: the run was made by the scheduler (cron, backfill), not by a user, so an install that
    has no model yet skips instead of failing."""
    request = parse_request(params)
    planned = service.plan(
        request, catalog_engine, campaign_id, MODE_CHECKS, price_history, as_of=as_of, scheduled=scheduled
    )
    if planned.skip:
        raise AirflowSkipException(planned.skip)
    return planned.groups_json()


def ingest_group(
    group_json: dict[str, Any],
    dag_run_id: str,
    date: str,
    benchmark: dict[str, Any] | None,
    hints: dict[str, Any],
) -> list[dict[str, Any]]:
    """Each workload's raw evidence of one server -> Parquet, each spec's rows apart (also after a failed
    level, and the workloads a server finished before it died).

    `benchmark` is the benchmark task's result (each spec's run summary, with the attempt whose evidence it
    left); a spec without one, or whose raw folder holds another attempt's files, has its table files
    removed (an earlier attempt's rows must not pass for this run's: accelbench.landing.ingest). Fails when
    the lake refused a spec's evidence, skips when no spec landed anything, saying why."""
    group = ServerGroup.model_validate(group_json)
    result = GroupSummary.model_validate(benchmark) if benchmark else GroupSummary()
    found = ingest.ingest_group(Lake.from_env(), group, dag_run_id, date, result, hints)
    if found.failure is not None:
        raise AirflowFailException(found.failure) from found.cause
    if found.skip is not None:
        raise AirflowSkipException(found.skip) from found.cause
    return found.xcom()


def summarize(campaign: str, date: str) -> dict[str, Any]:
    """Log one line per run of this campaign, read back from its date partition of the lake
    (accelbench.landing.summary).

    Skips (so no lake asset event is emitted) when the campaign landed no row at all.
    """
    summary = landing_summary.summarize(Lake.from_env(), campaign, date, catalog_engine)
    if summary.skip is not None:
        raise AirflowSkipException(summary.skip)
    return summary.xcom()
