"""Backfill over vLLM CPU versions: request `accelbench_cpu_version_campaign` runs for a list of
versions (older releases, for example), from the trigger form or REST. Each version is announced
as a partitioned event of `accelbench.runtime.vllm_cpu_releases` (partition key = the version),
exactly as release discovery does for new ones. Idempotent: a version the lake already holds
with the configured matrix (`ACCELBENCH_VERSION_MATRIX`) is skipped with the reason logged,
unless `force`; the version campaign checks again when it starts, so a repeated request for a
version does not measure it twice.
"""

from __future__ import annotations

from accelbench.airflow.assets import VLLM_CPU_RELEASES_ASSET
from accelbench.airflow.dag_defaults import VERSION_PATTERN, dag_kwargs
from accelbench.core.modes import default_mode
from airflow.sdk import Param, dag, get_current_context, task


@dag(
    dag_id="accelbench_cpu_version_backfill",
    schedule=None,
    doc_md=__doc__,
    params={
        "versions": Param(
            [],
            type="array",
            minItems=1,
            uniqueItems=True,
            items={"type": "string", "pattern": VERSION_PATTERN, "maxLength": 64},
            description="vLLM CPU versions, e.g. 0.18.0",
        ),
        "force": Param(False, type="boolean", description="Measure again what the lake already holds"),
    },
    **dag_kwargs("releases"),
)
def accelbench_cpu_version_backfill() -> None:
    @task(outlets=[VLLM_CPU_RELEASES_ASSET])
    def request_campaigns(params: dict | None = None) -> list[str]:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.versions import versions_to_request

        versions = [v.removeprefix("v") for v in params["versions"]]
        # Asset-triggered runs take their params' defaults: check in the mode they will run in.
        todo = versions_to_request(versions, default_mode(), params["force"])
        events = get_current_context()["outlet_events"][VLLM_CPU_RELEASES_ASSET]
        events.add_partitions(todo)
        events.extra = {"force": bool(params["force"]), "requested_by": "accelbench_cpu_version_backfill"}
        return todo

    request_campaigns()


accelbench_cpu_version_backfill()
