"""The campaign DAGs' task graph, defined once for every campaign DAG.

`measure_and_land(groups)` adds, to the DAG being defined, the mapped benchmark (one server per
configuration, its workloads run on it in turn: `accelbench.core.server_group`), the mapped ingest into the
lake (each workload's rows apart), the summary that emits the lake asset, and the watcher that fails the
run when any of them failed. `accelbench_campaign` and `accelbench_cpu_version_campaign` differ only in
how they plan. `campaign_dag(...)` is the whole campaign DAG, the plan task included: one function for
`accelbench_campaign` and for its old id `accelbench_cpu_campaign` (one DAG file each), so the two cannot
drift apart.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import DAG, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from accelbench.airflow.assets import CATALOG_ASSET, LAKE_ASSET
from accelbench.airflow.benchmark_operator import BenchmarkOperator, run_date
from accelbench.airflow.benchmark_xcom import NODE_XCOM
from accelbench.airflow.campaign_params import campaign_form_params
from accelbench.airflow.dag_defaults import dag_kwargs, timed
from accelbench.airflow.deadline import campaign_deadline
from accelbench.config import Settings, env_name, setting_default

if TYPE_CHECKING:
    from airflow.sdk.types import DagRunProtocol, RuntimeTaskInstanceProtocol

POOL_SETTING = env_name("benchmark_pool")
DEFAULT_POOL = str(setting_default("benchmark_pool"))


def benchmark_pool() -> str:
    """The Airflow pool the benchmark tasks take a slot of: on EKS, sized to the NodePool
    (docs/guides/deploy-on-eks.md)."""
    return Settings.from_env("benchmark_pool").airflow.benchmark_pool


def measure_and_land(groups: Any) -> Any:
    """`groups`: the plan task's output (a list of ServerGroup dicts: a server each, its workloads' specs).
    Returns the summary task."""

    @task(map_index_template="{{ instance_type }}", trigger_rule="all_done")
    def ingest(
        group: dict[str, Any],
        dag_run: DagRunProtocol | None = None,
        ti: RuntimeTaskInstanceProtocol | None = None,
    ) -> list[dict[str, Any]]:
        from accelbench.airflow.tasks.campaign import ingest_group

        assert dag_run is not None and ti is not None  # Airflow passes the run's context

        get_current_context()["instance_type"] = group["specs"][0]["server"]["instance_type"]  # type: ignore[typeddict-unknown-key]  # for map_index_template
        hints = ti.xcom_pull(task_ids="benchmark", map_indexes=ti.map_index, key=NODE_XCOM) or {}
        result = ti.xcom_pull(task_ids="benchmark", map_indexes=ti.map_index)
        return ingest_group(group, dag_run.run_id, run_date(dag_run), result, hints)

    @task(trigger_rule="all_done", outlets=[LAKE_ASSET])
    def summary(dag_run: DagRunProtocol | None = None) -> dict[str, Any]:
        from accelbench.airflow.tasks.campaign import campaign_id, summarize

        assert dag_run is not None  # Airflow passes the run's context

        return summarize(campaign_id(dag_run.dag_id, dag_run.run_id), run_date(dag_run))

    @task(trigger_rule="one_failed")
    def watcher() -> None:
        raise AirflowFailException("a task of this campaign failed: see the failed task's log")

    # One retry, for a worker that died: kubernetes mode reconnects to the running pod, local mode
    # measures again what the first try left incomplete. A failed level or a server that cannot start fails
    # without retry (clearing the task measures only the workloads left incomplete).
    results = BenchmarkOperator.partial(
        task_id="benchmark",
        map_index_template="{{ task.benchmark_group.server.instance_type }}",
        retries=1,
        retry_delay=timedelta(seconds=30),
        pool=benchmark_pool(),
    ).expand(group=groups)
    ingested = ingest.expand(group=groups)
    done = summary()
    results >> ingested >> done
    [results, ingested, done] >> watcher()
    return done


def campaign_dag(dag_id: str, schedule: str | None, doc_md: str, description: str) -> DAG:
    """The campaign DAG under `dag_id`: the form's params (from CampaignRequest), `plan`, then
    `measure_and_land`. Called by dags/accelbench_campaign.py and by the old id's file."""

    @dag(
        dag_id=dag_id,
        schedule=timed(schedule) if schedule else None,  # none where ACCELBENCH_SCHEDULES is off
        doc_md=doc_md,
        description=description,
        params=campaign_form_params(),  # from CampaignRequest: defaults, limits, descriptions
        deadline=campaign_deadline(),  # flagged in the UI past the campaign's estimated duration
        **dag_kwargs("campaign"),
    )
    def campaign() -> None:
        @task(inlets=[CATALOG_ASSET])
        def plan(
            params: dict[str, Any] | None = None, dag_run: DagRunProtocol | None = None
        ) -> list[dict[str, Any]]:
            from accelbench.airflow.tasks.campaign import campaign_id, plan_benchmarks

            assert params is not None and dag_run is not None  # Airflow passes the run's params and run
            as_of = dag_run.logical_date or dag_run.run_after
            scheduled = dag_run.run_type != "manual"  # cron or backfill: an unconfigured install skips
            run = campaign_id(dag_run.dag_id, dag_run.run_id)
            return plan_benchmarks(dict(params), run, as_of, scheduled)

        measure_and_land(plan())

    return campaign()
