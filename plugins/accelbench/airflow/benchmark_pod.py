"""KubernetesPodOperator for one BenchmarkSpec: the library's pod parts, Guaranteed QoS end to end."""

from __future__ import annotations

from typing import Any

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.providers.cncf.kubernetes.utils.xcom_sidecar import PodDefaults
from kubernetes.client import models as k8s

from accelbench.campaign.spec import BenchmarkSpec
from accelbench.k8s import placement
from accelbench.k8s.pod import build_pod_parts, guaranteed

XCOM_SIDECAR_RESOURCES = guaranteed("10m", "32Mi")


class BenchmarkPodOperator(KubernetesPodOperator):
    """One pod per ServerSpec: the vLLM server as a native sidecar, the load generator as main container."""

    def __init__(self, *, spec: BenchmarkSpec, namespace: str | None = None, **kwargs: Any) -> None:
        parts = build_pod_parts(spec, **({"namespace": namespace} if namespace else {}))
        self.benchmark_spec = spec
        defaults: dict[str, Any] = {
            "name": parts.name,
            "namespace": parts.namespace,
            "image": parts.loadgen_image,
            "image_pull_policy": "Always",
            "cmds": parts.loadgen_cmds,
            "env_vars": parts.loadgen_env,
            "container_resources": parts.loadgen_resources,
            "container_security_context": parts.loadgen_security_context,
            "init_containers": [parts.server],
            "volumes": parts.volumes,
            "volume_mounts": parts.volume_mounts,
            "node_selector": parts.node_selector,
            "tolerations": parts.tolerations,
            "labels": parts.labels,
            "annotations": parts.annotations,
            "full_pod_spec": parts.pod_spec,
            "schedule_timeout_seconds": parts.schedule_timeout_s,
            "startup_timeout_seconds": parts.startup_timeout_s,
            "on_finish_action": "delete_pod",
            "durable": True,  # a retry reconnects to the running pod instead of starting a second one
            "do_xcom_push": True,
            "get_logs": True,
            "init_container_logs": False,
            "log_events_on_failure": True,
            "service_account_name": placement.BENCHMARK_SERVICE_ACCOUNT,
            "automount_service_account_token": False,
            "random_name_suffix": True,
            "xcom_sidecar_container_security_context": parts.loadgen_security_context,
        }
        super().__init__(**(defaults | kwargs))

    def build_pod_request_obj(self, context: Any = None) -> k8s.V1Pod:
        """The provider's pod; the xcom sidecar gets requests == limits (Guaranteed QoS), pull Always."""
        pod = super().build_pod_request_obj(context)
        for container in pod.spec.containers:
            if container.name == PodDefaults.SIDECAR_CONTAINER_NAME:
                container.resources = XCOM_SIDECAR_RESOURCES
                container.image_pull_policy = "Always"
        return pod
