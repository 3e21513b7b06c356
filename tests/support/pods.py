"""The benchmark pod as KubernetesPodOperator builds it, for the tests that validate, scan or send it."""

from __future__ import annotations

from pathlib import Path

from accelbench.campaign.plan import plan_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.core.server_group import ServerGroup
from accelbench.sizing.model_config import load_model_shape
from kubernetes.client import ApiClient

from tests.support.planning import BUILDS, CATALOG, STORE


def render_benchmark_pod(
    kubeconfig: Path, runtime: str, instance_type: str, model: str = "local/tiny-llama"
) -> dict:
    """The pod manifest (a plain dict) of a one-instance campaign's first spec."""
    from accelbench.airflow.benchmark_pod import BenchmarkPod

    req = CampaignRequest(instance_types=[instance_type], model=model, runtime=runtime, dtype="bfloat16")
    plan = plan_campaign(
        req, CATALOG, "0.19.1", "campaign-1", load_shape=lambda m: load_model_shape(m, STORE), builds=BUILDS
    )
    op = BenchmarkPod(
        task_id="bench",
        group=ServerGroup(specs=(plan.specs[0],)),
        config_file=str(kubeconfig),
        lake_uri="s3://lake-bucket/accelbench",
    )
    assert op.on_finish_action.value == "delete_pod"
    assert op.schedule_timeout_seconds >= 600 and op.startup_timeout_seconds >= 900
    manifest = ApiClient().sanitize_for_serialization(op.build_pod_request_obj())
    return manifest
