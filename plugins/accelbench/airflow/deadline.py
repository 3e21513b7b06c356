"""The campaign run's deadline: an Airflow deadline alert whose time comes from the campaign's estimated
duration, so that a run stuck behind a node that never comes is flagged in the UI (the run's deadlines,
missed) long before the schedule's next run, and the triggerer logs it.

Airflow fixes a run's deadline when it creates the run, before the plan task has run: `CampaignEstimate`,
a custom deadline reference the plugin registers, reads the run's conf there (in the scheduler, or
wherever the run is created) and estimates from the request alone, with no catalog, lake or model store
(`accelbench.campaign.estimate.deadline_s`): queued at + ACCELBENCH_DEADLINE_FACTOR x the request's servers'
stated start-up and requests, shared over the benchmark pool's slots. Anything it cannot read gives no
deadline rather than a wrong one: a reference that raised would stop the run from being created.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk.definitions.callback import AsyncCallback
from airflow.sdk.definitions.deadline import BaseDeadlineReference, DeadlineAlert

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)


def run_request(conf: dict[str, Any]) -> Any:
    """The CampaignRequest a campaign run of this conf plans: the campaign form's defaults, then the conf."""
    from accelbench.airflow.dag_defaults import CAMPAIGN_FORM_FIELDS
    from accelbench.campaign.plan import parse_request
    from accelbench.campaign.request import form_defaults

    return parse_request(form_defaults(CAMPAIGN_FORM_FIELDS) | dict(conf))


def run_deadline_s(conf: dict[str, Any], slots: int) -> float | None:
    """Seconds after the run was queued at which a run of `conf` is late; None: no deadline."""
    from accelbench.campaign.estimate import Stated, deadline_s
    from accelbench.config import Settings

    factor = Settings.from_env("deadline_factor").airflow.deadline_factor
    return deadline_s(run_request(conf), slots, Stated.from_env(), factor)


class CampaignEstimate(BaseDeadlineReference):
    """When the run was queued plus its estimated duration (see the module's docstring); the alert's
    interval is added to it (CAMPAIGN_DEADLINE: none)."""

    required_kwargs: ClassVar[set[str]] = {"dag_id", "run_id"}

    def _evaluate_with(self, *, session: Session, **kwargs: Any) -> datetime | None:
        from airflow.models.dagrun import DagRun
        from airflow.models.pool import Pool
        from sqlalchemy import select

        from accelbench.config import Settings

        dag_id, run_id = kwargs["dag_id"], kwargs["run_id"]
        try:
            run = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
            if run is None:
                return None
            slots = session.scalar(
                select(Pool.slots).where(
                    Pool.pool == Settings.from_env("benchmark_pool").airflow.benchmark_pool
                )
            )
            seconds = run_deadline_s(run.conf or {}, slots if slots and slots > 0 else 1)
        except Exception as exc:  # never stop the run from being created: no deadline, and say why
            log.warning("no deadline for %s %s: %s: %s", dag_id, run_id, type(exc).__name__, exc)
            return None
        if seconds is None:
            return None
        start = run.queued_at or run.run_after or datetime.now(UTC)
        log.info("the campaign run %s %s is late %.0f s after it was queued", dag_id, run_id, seconds)
        return start + timedelta(seconds=seconds)


async def campaign_late(context: dict[str, Any], **_: Any) -> None:
    """The missed deadline's callback, in the triggerer: a line in its log naming the run."""
    run, deadline = context.get("dag_run") or {}, context.get("deadline") or {}
    log.warning(
        "campaign run %s of %s missed its deadline %s: a benchmark may be waiting for a node, an image or a "
        "model; see its benchmark tasks' logs",
        run.get("run_id"),
        run.get("dag_id"),
        deadline.get("deadline_time"),
    )


def campaign_deadline() -> DeadlineAlert | None:
    """The alert the campaign DAGs carry; none with ACCELBENCH_DEADLINE_FACTOR=0 (read from the environment
    alone: safe at parse time). `airflow dags test` of a DAG with a deadline alert fails once its run has
    succeeded in Airflow 3.3.2 (apache/airflow#73428): the tests parse the DAGs with the factor 0."""
    from accelbench.config import Settings

    if Settings.from_env("deadline_factor").airflow.deadline_factor <= 0:
        return None
    return DeadlineAlert(
        reference=CampaignEstimate(),
        interval=timedelta(0),
        callback=AsyncCallback(campaign_late),
        name="campaign estimate",
    )
