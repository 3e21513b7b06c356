"""One BenchmarkSpec, in the execution mode the run asks for: a benchmark pod, or a local vLLM process.

The operator is a KubernetesPodOperator (the library's pod parts, Guaranteed QoS end to end) whose
execute() runs the local executor instead when the run's `execution_mode` is local, so the campaign
DAG has one shape in both modes. Either way the raw evidence ends in the lake's raw/ area and the
ingest task turns it into Parquet.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.providers.cncf.kubernetes.utils.xcom_sidecar import PodDefaults
from airflow.sdk.exceptions import AirflowFailException
from kubernetes.client import models as k8s

from accelbench.campaign.spec import BenchmarkSpec
from accelbench.errors import AccelbenchError
from accelbench.execution.modes import check_mode, default_mode
from accelbench.k8s import placement
from accelbench.k8s.pod import LAKE_DATE_ENV, build_pod_parts, guaranteed
from accelbench.lake.store import Lake

XCOM_SIDECAR_RESOURCES = guaranteed("10m", "32Mi")
NODE_XCOM = "node"  # XCom key: facts about the node the pod ran on (zone, capacity type)
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
log = logging.getLogger(__name__)


def run_date(dag_run: Any) -> str:
    """The lake's date partition for a DAG run: its logical date, or when it ran (manual runs)."""
    when: datetime = dag_run.logical_date or dag_run.run_after
    return when.strftime("%Y-%m-%d")


class BenchmarkOperator(KubernetesPodOperator):
    """One server per spec: the vLLM server as a native sidecar, the load generator as main container."""

    def __init__(
        self,
        *,
        spec: BenchmarkSpec | dict[str, Any],
        namespace: str | None = None,
        lake_uri: str | None = None,
        **kwargs: Any,
    ) -> None:
        spec = spec if isinstance(spec, BenchmarkSpec) else BenchmarkSpec.model_validate(spec)
        self.benchmark_spec = spec
        self.lake_uri = lake_uri or Lake.from_env().uri
        parts = build_pod_parts(
            spec, **({"namespace": namespace} if namespace else {}), lake_uri=self.lake_uri
        )
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

    def execute(self, context: Any) -> Any:
        spec, date = self.benchmark_spec, run_date(context["dag_run"])
        context["ti"].xcom_push(key=NODE_XCOM, value={})  # so that ingest always finds the key
        try:
            mode = check_mode(context["params"].get("execution_mode") or default_mode())
            log.info("benchmark %s on %s, %s mode", spec.spec_id, spec.server.instance_type, mode)
            if mode == "local":
                from accelbench.execution.local import run_local

                result = run_local(spec, Lake(self.lake_uri), date)
            else:
                result = self._run_pod(context, date)
        except AccelbenchError as exc:
            raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc
        if result.get("failure"):
            raise AirflowFailException(
                f"benchmark {spec.spec_id} failed at {result['failure']}; the levels measured before it "
                "are kept and ingested"
            )
        return result

    def _run_pod(self, context: Any, date: str) -> dict[str, Any]:
        self.env_vars = [*self.env_vars, k8s.V1EnvVar(name=LAKE_DATE_ENV, value=date)]
        try:
            return super().execute(context) or {}
        finally:
            facts = self._node_facts()
            if facts:
                context["ti"].xcom_push(key=NODE_XCOM, value=facts)

    def _node_facts(self) -> dict[str, str]:
        """Zone and capacity type of the pod's node (provenance and spot-vs-on-demand cost); best effort."""
        pod = self.remote_pod or getattr(self, "pod", None)  # the API's copy knows the node
        node = pod.spec.node_name if pod is not None and pod.spec is not None else None
        if not node:
            return {}
        facts = {"node": node}
        try:
            labels = self.client.read_node(node).metadata.labels or {}
        except Exception as exc:  # the RBAC may not grant `get nodes`: keep the node name, say why
            log.warning("cannot read node %s (%s); zone and capacity type stay empty", node, exc)
            return facts
        for key, label in (("zone", ZONE_LABEL), ("capacity_type", CAPACITY_TYPE_LABEL)):
            if labels.get(label):
                facts[key] = labels[label]
        return facts
