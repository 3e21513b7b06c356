"""Benchmark vLLM on Graviton CPUs, and on the GPU and Neuron types beside them: plan (guards + memory fit,
the runtime following each type's tier), one server per instance type and workload driven through every load
level, the raw evidence ingested into the Parquet lake (also what a failed benchmark measured before it
failed), a summary, and a watcher so that one failed benchmark fails the run. Execution: a benchmark pod on
the tier's NodePool, or a local vLLM process (`execution_mode`). The id keeps the name it began with.
"""

from __future__ import annotations

from accelbench.airflow.assets import CATALOG_ASSET
from accelbench.airflow.campaign_graph import measure_and_land
from accelbench.airflow.campaign_params import campaign_form_params
from accelbench.airflow.dag_defaults import dag_kwargs
from airflow.sdk import dag, task


@dag(
    dag_id="accelbench_cpu_campaign",
    schedule="0 3 * * 1",  # weekly, Monday 03:00 UTC, over the default matrix
    doc_md=__doc__,
    params=campaign_form_params(),  # from CampaignRequest: defaults, limits, descriptions
    **dag_kwargs("campaign"),
)
def accelbench_cpu_campaign() -> None:
    @task(inlets=[CATALOG_ASSET])
    def plan(params: dict | None = None, dag_run=None) -> list[dict]:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.campaign import campaign_id, plan_benchmarks

        request = dict(params)
        as_of = dag_run.logical_date or dag_run.run_after
        scheduled = dag_run.run_type != "manual"  # cron or backfill: an unconfigured install skips
        return plan_benchmarks(request, campaign_id(dag_run.dag_id, dag_run.run_id), as_of, scheduled)

    measure_and_land(plan())


accelbench_cpu_campaign()
