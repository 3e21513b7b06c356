"""One campaign per vLLM CPU version: runs for each partitioned event of
`accelbench.runtime.vllm_cpu_releases` (partition key = the version; `accelbench_vllm_cpu_releases`
announces new releases, `accelbench_cpu_version_backfill` older ones), over the matrix of
`ACCELBENCH_VERSION_MATRIX` (a JSON object of campaign params; default: the weekly campaign's).
Specs the lake already holds complete for this version and matrix are skipped, with the reason
logged, unless the event's extra says `"force": true`. After planning, the same tasks as
`accelbench_campaign` (one definition: `accelbench.airflow.campaign_graph`), then the
regression gate (also when nothing was measured again: a new baseline may show a regression): this
version against the previous one on every shared matrix point; regressions beyond run-to-run noise go to
the task log, a new report, and the notifier of `ACCELBENCH_REGRESSION_NOTIFIER`. Regressions no owner
answered yet wait in `approve_regressions` (Airflow's human-in-the-loop step; the UI's "Required
actions", or REST) for an owner to accept them as known, with a reason, or reject the version; the answer
goes to the catalog and the report, and the next campaigns of the version follow it
(`accelbench.decisions`). With `ACCELBENCH_FAIL_ON_REGRESSION=true` the gate fails the run instead.
"""

from __future__ import annotations

from accelbench.airflow.approval import approval_step
from accelbench.airflow.assets import CATALOG_ASSET, VLLM_CPU_RELEASES_ASSET
from accelbench.airflow.campaign_graph import measure_and_land
from accelbench.airflow.campaign_params import campaign_params
from accelbench.airflow.dag_defaults import dag_kwargs
from airflow.sdk import Param, PartitionedAssetTimetable, dag, get_current_context, task


@dag(
    dag_id="accelbench_cpu_version_campaign",
    schedule=PartitionedAssetTimetable(assets=VLLM_CPU_RELEASES_ASSET),
    doc_md=__doc__,
    params={
        **campaign_params(["execution_mode"]),  # from CampaignRequest, like the campaign form's
        "force": Param(False, type="boolean", description="Measure again what the lake already holds"),
    },
    **dag_kwargs("campaign", "releases"),
)
def accelbench_cpu_version_campaign() -> None:
    @task(inlets=[CATALOG_ASSET])
    def plan(params: dict | None = None, dag_run=None) -> list[dict]:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.campaign import campaign_id
        from accelbench.airflow.tasks.versions import plan_version_campaign

        context = get_current_context()
        extras = [e.extra or {} for events in context["triggering_asset_events"].values() for e in events]
        return plan_version_campaign(
            context.get("partition_key") or dag_run.partition_key,
            params["execution_mode"],
            bool(params["force"]) or any(x.get("force") is True for x in extras),
            campaign_id(dag_run.dag_id, dag_run.run_id),
            dag_run.logical_date or dag_run.run_after,
        )

    @task(trigger_rule="none_failed")  # also when the plan skipped: nothing measured again
    def regression_gate(dag_run=None) -> dict:
        from accelbench.airflow.tasks.versions import regression_gate as gate

        context = get_current_context()
        return gate(context.get("partition_key") or dag_run.partition_key, dict(context))

    gate = regression_gate()
    measure_and_land(plan()) >> gate
    approval_step(gate)


accelbench_cpu_version_campaign()
