"""The benchmark pod as a KubernetesPodOperator: the library's pod parts, Guaranteed QoS end to end.

Imported only when a benchmark runs in kubernetes mode (the kubernetes client takes seconds to
import, too slow for DAG parsing); BenchmarkOperator drives it.
"""

from __future__ import annotations

import inspect
import logging
from datetime import UTC, datetime
from typing import Any

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.providers.cncf.kubernetes.utils.container import get_container_status
from airflow.providers.cncf.kubernetes.utils.xcom_sidecar import PodDefaults
from kubernetes.client import models as k8s
from kubernetes.config import ConfigException
from pydantic import ValidationError

from accelbench.airflow.benchmark_xcom import NODE_XCOM
from accelbench.config import LAKE_SETTING
from accelbench.core.evidence import GroupSummary
from accelbench.core.modes import ExecutionMode
from accelbench.core.server_group import ServerGroup
from accelbench.core.server_log import LOG_HEAD_BYTES, reported_quantization
from accelbench.core.startup_phases import STARTUP_FILE, Startup
from accelbench.errors import AccelbenchError, ConfigError, PodNotScheduled
from accelbench.k8s import placement
from accelbench.k8s.pod import build_pod_parts, guaranteed, unscheduled_message
from accelbench.k8s.pod_startup import pod_startup
from accelbench.lake.raw import RawLocation, complete_run
from accelbench.lake.store import Lake
from accelbench.loadgen.contract import ATTEMPT_ENV, LAKE_DATE_ENV
from accelbench.loadgen.driver import SERVER_LOG_TAIL_LINES, clip_log_tail
from accelbench.sizing.fit import XCOM_SIDECAR_CPU_M, XCOM_SIDECAR_MEMORY_MIB

XCOM_SIDECAR_RESOURCES = guaranteed(f"{XCOM_SIDECAR_CPU_M}m", f"{XCOM_SIDECAR_MEMORY_MIB}Mi")
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
# Provenance facts (ingest hints) read from the node's labels. The instance-type label overrides the
# DMI product name the load generator read on the node: the scheduler placed the pod by it.
NODE_LABELS = {
    "zone": ZONE_LABEL,
    "capacity_type": CAPACITY_TYPE_LABEL,
    "host_instance_type": placement.INSTANCE_TYPE_LABEL,
}
log = logging.getLogger(__name__)


class BenchmarkPod(KubernetesPodOperator):
    """One server per group (a configuration's workloads, `core.server_group`): the vLLM server as a native
    sidecar, the load generator as main container, running the workloads in turn.

    The provider's callbacks (KubernetesPodOperatorCallback, apache-airflow-providers-cncf-kubernetes
    10.25) run at fixed points of execute_sync, and none runs where this operator has to act: so it
    overrides three methods, each said why below (line numbers: that provider's operators/pod.py). The
    load generator's summary needs no override of its own: cleanup receives the XCom value.

    - `cleanup`: how the server container died, and the load generator's summary, are read here, before
      the provider deletes the pod. execute_sync calls on_pod_completion and on_pod_teardown (l. 898,
      906) only after await_pod_start and await_pod_completion returned (l. 880, 894): a pod whose
      start timed out, or whose log stream broke, never reaches them. post_complete_action (l. 923, in
      execute_sync's `finally`) calls cleanup on every path, with the pod still there and the XCom
      value read; on_pod_cleanup (l. 1366) runs after the deletion (l. 1410), and not at all when
      cleanup raises for a failed container (l. 1433), the case that matters.
    - `await_pod_start`: a pod that found no node is described (its PodScheduled condition) before
      cleanup deletes it; no callback runs when the start fails (on_pod_starting, l. 886, only after a
      start).
    - `build_pod_request_obj`: the XCom sidecar gets requests == limits (Guaranteed QoS). The
      manifest must be right wherever it is built (dry_run(), l. 1761, and the tests render it), while
      on_pod_manifest_created (l. 852) only sees the manifest execute() built.
    """

    def __init__(
        self,
        *,
        group: ServerGroup | dict[str, Any],
        namespace: str | None = None,
        lake_uri: str | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("deferrable"):
            raise ValueError("BenchmarkPod cannot defer: BenchmarkOperator runs it inside its own task")
        group = group if isinstance(group, ServerGroup) else ServerGroup.model_validate(group)
        self.benchmark_group = group
        self.lake_uri = lake_uri or Lake.from_env().uri
        parts = build_pod_parts(
            group, **({"namespace": namespace} if namespace else {}), lake_uri=self.lake_uri
        )
        self.parts = parts
        self.unscheduled: str | None = None  # set when the pod found no node in time
        defaults: dict[str, Any] = {
            "name": parts.name,
            "namespace": parts.namespace,
            "image": parts.loadgen_image,
            "image_pull_policy": "Always",
            "cmds": parts.loadgen_cmds,
            "env_vars": parts.loadgen_env,
            "container_resources": parts.loadgen_resources,
            "container_security_context": parts.loadgen_security_context,
            "init_containers": [*([parts.weights] if parts.weights else []), parts.server],
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
            "deferrable": False,  # run() drives execute() directly; a deferral would resume the wrong task
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

    def build_pod_request_obj(self, context: Any = None, *, dry_run: bool = False) -> k8s.V1Pod:
        """The provider's pod; the xcom sidecar gets requests == limits (Guaranteed QoS), pull Always."""
        pod = super().build_pod_request_obj(context, dry_run=dry_run)
        for container in pod.spec.containers:
            if container.name == PodDefaults.SIDECAR_CONTAINER_NAME:
                container.resources = XCOM_SIDECAR_RESOURCES
                container.image_pull_policy = "Always"
        return pod

    def await_pod_start(self, pod: k8s.V1Pod) -> None:
        """The provider's wait; a pod that never got a node is described before cleanup deletes it."""
        try:
            super().await_pod_start(pod)
        except Exception as exc:
            if "to be scheduled" not in str(exc):
                raise
            said = None
            try:
                remote = self.pod_manager.read_pod(pod)
                conditions = (remote.status.conditions if remote.status else None) or []
                said = next((c.message or c.reason for c in conditions if c.type == "PodScheduled"), None)
            except Exception as read_error:  # the description is best effort; the failure is not
                log.warning(
                    "cannot read pod %s to say why it was not scheduled: %s", pod.metadata.name, read_error
                )
            self.unscheduled = unscheduled_message(
                self.parts, self.benchmark_group.server.instance_type, self.schedule_timeout_seconds, said
            )
            log.error("%s", self.unscheduled)
            raise

    def run(self, context: Any, date: str, attempt: str) -> GroupSummary:
        """Run the pod inside the calling task (its context, its XCom); the load generator's summary (each
        workload's).

        A pod whose load generator reported (a failed level, an unreachable lake) returns that
        summary, for the caller to fail on without retry; a pod that never reported raises the
        provider's error (retryable: the next try reconnects to a still-running pod).
        """
        self.env_vars = [
            *self.env_vars,
            k8s.V1EnvVar(name=LAKE_DATE_ENV, value=date),
            k8s.V1EnvVar(name=ATTEMPT_ENV, value=attempt),
        ]
        self.loadgen_result: dict[str, Any] | None = None  # set by cleanup(): the XCom value it got
        self.server_death: dict[str, Any] = {}  # set by cleanup() when the server container died
        self.served: dict[str, Any] = {}  # set by cleanup(): what the server's log says it served
        self.startup: Startup | None = None  # set by cleanup(): the pod's start-up in phases
        # unwrap: Airflow's ExecutorSafeguard would log that execute() runs outside the task runner,
        # which is by design here: BenchmarkOperator is the task, this operator its kubernetes engine.
        execute = inspect.unwrap(KubernetesPodOperator.execute)
        try:
            execute(self, context)
        except ConfigException as exc:  # the client's own message, not its traceback
            raise ConfigError(
                f"connection {self.kubernetes_conn_id}", None, f"no usable Kubernetes configuration ({exc})"
            ) from None
        except Exception as exc:
            if not (isinstance(self.loadgen_result, dict) and "runs" in self.loadgen_result):
                if self.unscheduled:  # not retried: a retry would wait as long for the same capacity
                    raise PodNotScheduled(self.unscheduled) from exc
                raise
        finally:
            facts = self._node_facts()
            facts |= self.served | self.server_death  # ingest puts the death on the failed level's row only
            if facts:
                context["ti"].xcom_push(key=NODE_XCOM, value=facts)
        if not self.loadgen_result:
            raise AccelbenchError(f"the load generator of pod {self.name} ended without writing its summary")
        try:
            return GroupSummary.model_validate(self.loadgen_result)
        except ValidationError as exc:  # e.g. a load-generator image of another suite version
            raise AccelbenchError(
                f"the load generator's summary is not this suite's GroupSummary: {exc}"
            ) from None

    def cleanup(
        self,
        pod: k8s.V1Pod,
        remote_pod: k8s.V1Pod,
        xcom_result: dict[Any, Any] | None = None,
        context: Any = None,
    ) -> None:
        """The provider's cleanup, which deletes the pod; first, keep the load generator's summary (the
        provider raises on a failed container after reading it) and how the server container died, if it
        did: the load generator cannot see that, and the pod's status and logs go with the pod. An
        override, not a callback: see the class's docstring."""
        self.loadgen_result = xcom_result
        if remote_pod is not None:
            self.served = self._served_quantization(remote_pod)
            self.server_death = self._server_death(remote_pod)
            self.startup = self._startup(remote_pod)
        super().cleanup(pod, remote_pod, xcom_result, context)

    def _startup(self, remote_pod: k8s.V1Pod) -> Startup | None:
        """The pod's start-up in phases (accelbench.k8s.pod_startup) from its latest status, its events and
        its node; None when the API cannot say. Best effort: read before the pod (and its events) goes."""
        try:
            pod = self.pod_manager.read_pod(remote_pod)
        except Exception as exc:
            log.warning("cannot read pod %s's start-up: %s", remote_pod.metadata.name, exc)
            return None
        try:
            events = self.pod_manager.read_pod_events(pod).items or []
        except Exception as exc:  # the RBAC may not grant `list events`: no kubelet pull time then
            log.warning("cannot read pod %s's events for the start-up: %s", pod.metadata.name, exc)
            events = []
        node = None
        if pod.spec is not None and pod.spec.node_name:
            try:
                node = self.client.read_node(pod.spec.node_name)
            except Exception as exc:  # the RBAC may not grant `get nodes`: no node launch then
                log.warning("cannot read node %s for the start-up: %s", pod.spec.node_name, exc)
        weights = self.parts.weights.name if self.parts.weights else None
        found = pod_startup(pod, events, node, self.parts.server.name, self.base_container_name, weights)
        if found is None:
            log.warning("pod %s's start-up cannot be read from the API", pod.metadata.name)
            return None
        phases = ", ".join(f"{k} {v:.0f}" for k, v in found.phases.items() if v is not None)
        log.info("pod %s ready %.0f s after it was created (%s)", pod.metadata.name, found.ready_s, phases)
        return found

    def _served_quantization(self, remote_pod: k8s.V1Pod) -> dict[str, Any]:
        """`server_quantization`: what the server container's log (its head, where vLLM says what it loaded)
        reports it served (`accelbench.core.server_log`), as local mode reads its server's log file; {} when
        it cannot be read or says nothing. Best effort: read before the pod (and its logs) is deleted."""
        name = self.parts.server.name
        try:
            lines = self.pod_manager.read_pod_logs(remote_pod, name, follow=False, limit_bytes=LOG_HEAD_BYTES)
            found = reported_quantization(b"".join(lines).decode(errors="replace"))
        except Exception as exc:
            log.warning(
                "cannot read the log of pod %s's %s container: %s", remote_pod.metadata.name, name, exc
            )
            return {}
        if found is None:
            log.warning("the %s container's log does not say what quantization it served", name)
            return {}
        log.info("the %s container's log says it served: %s", name, found)
        return {"server_quantization": found}

    def _server_death(self, remote_pod: k8s.V1Pod) -> dict[str, Any]:
        """server_exit_code and server_log_tail (its last log lines, then the kubelet's reason) of a
        server container that died while the pod ran; {} if it did not. Best effort."""
        name = self.parts.server.name
        try:
            pod = self.pod_manager.read_pod(remote_pod)  # the latest status: a restart may be recent
        except Exception as exc:
            log.warning("cannot read pod %s to see if its server died: %s", remote_pod.metadata.name, exc)
            return {}
        died = server_termination(pod, name)
        if died is None:
            return {}
        ended, restarted = died
        said = f"kubelet: container {name} terminated, exit code {ended.exit_code}, reason {ended.reason}"
        if ended.message:
            said += f": {ended.message.strip()}"
        log.error("%s", said)
        try:  # a restarted container's log is its new instance's; the one that died is the previous one
            lines = self.pod_manager.read_pod_logs(
                pod, name, tail_lines=SERVER_LOG_TAIL_LINES, follow=False, previous=restarted
            )
            logged = b"".join(lines).decode(errors="replace")
        except Exception as exc:
            log.warning("cannot read the log of pod %s's %s container: %s", pod.metadata.name, name, exc)
            logged = ""
        tail = logged if not logged or logged.endswith("\n") else logged + "\n"
        return {"server_exit_code": ended.exit_code, "server_log_tail": clip_log_tail(tail + said + "\n")}

    def _node_facts(self) -> dict[str, str]:
        """Zone, capacity type and instance type of the pod's node, and the server's image digest
        (provenance, spot-vs-on-demand cost, whether prices apply); best effort."""
        pod = self.remote_pod or getattr(self, "pod", None)  # the API's copy knows the node
        node = pod.spec.node_name if pod is not None and pod.spec is not None else None
        if not node:
            return {}
        facts = {"node": node}
        image = server_image_id(pod, self.parts.server.name)
        if image:
            facts["server_image_id"] = image
        try:
            labels = self.client.read_node(node).metadata.labels or {}
        except Exception as exc:  # the RBAC may not grant `get nodes`: keep the node name, say why
            log.warning(
                "cannot read node %s (%s); zone and capacity type stay empty, the instance type is the "
                "load generator's DMI reading",
                node,
                exc,
            )
            return facts
        for key, label in NODE_LABELS.items():
            if labels.get(label):
                facts[key] = labels[label]
        return facts


def server_image_id(pod: k8s.V1Pod, container: str) -> str | None:
    """What the kubelet ran for `container`: its status's imageID (the pulled digest), not the tag asked for.

    The server is a native sidecar, so its status is among the init containers'.
    """
    status = get_container_status(pod, container)  # the provider's: init (sidecar) containers included
    return str(status.image_id) if status is not None and status.image_id else None


def server_termination(pod: k8s.V1Pod, container: str) -> tuple[k8s.V1ContainerStateTerminated, bool] | None:
    """How `container` died while the pod ran, and whether it has been restarted since; None if it did not.

    The server is a native sidecar (restartPolicy Always): the kubelet restarts it when it dies, so a
    restart count says it died and lastState says how. Without a restart, a terminated state with a
    non-zero exit code (a clean stop at the pod's end exits 0).
    """
    status = get_container_status(pod, container)  # the provider's: init (sidecar) containers included
    if status is None:
        return None
    if status.restart_count and status.last_state is not None and status.last_state.terminated is not None:
        return status.last_state.terminated, True
    ended = status.state.terminated if status.state is not None else None
    return (ended, False) if ended is not None and ended.exit_code != 0 else None


class KubernetesExecutor:
    """`kubernetes` mode behind the Executor protocol: a BenchmarkPod run inside the calling task (its
    context, its XCom), writing to an s3:// lake the pods can reach."""

    mode: ExecutionMode = "kubernetes"

    def __init__(self, lake: Lake, context: Any, task_id: str, **pod_kwargs: Any) -> None:
        self.lake, self.context, self.task_id, self.pod_kwargs = lake, context, task_id, pod_kwargs
        self.pod: BenchmarkPod | None = None

    def run(self, group: ServerGroup, date: str, attempt: str) -> GroupSummary:
        if self.lake.local:
            raise ConfigError(
                LAKE_SETTING, self.lake.uri, "kubernetes mode needs an s3:// lake the pods can write"
            )
        # What an earlier attempt measured completely is not measured again (a cleared task); a retry that
        # reconnects to the earlier attempt's still-running pod gets all of its workloads' summaries.
        earlier = {s.spec_id: found for s in group.specs if (found := complete_run(self.lake, s, date))}
        todo = tuple(s for s in group.specs if s.spec_id not in earlier)
        if not todo:
            log.info("every workload of %s was measured completely by an earlier attempt", group.group_id)
            return GroupSummary(runs=[earlier[s.spec_id] for s in group.specs])
        pod_group = ServerGroup(specs=todo)
        self.pod = BenchmarkPod(
            task_id=self.task_id, group=pod_group, lake_uri=self.lake.uri, **self.pod_kwargs
        )
        spec = todo[0]  # the pod's start belongs to its first workload's rows
        try:
            ran = self.pod.run(self.context, date, attempt)
            runs = [r for s in group.specs if (r := ran.of(s.spec_id) or earlier.get(s.spec_id))]
            return GroupSummary(runs=runs, stopped=ran.stopped)
        finally:  # beside the pod's evidence (the pod is deleted now): the ingest makes it the `startups` row
            if self.pod.startup is not None:
                where = RawLocation(spec.server.accelerator_type, date, spec.campaign_id, spec.spec_id)
                ended = self.pod.startup.model_copy(update={"ended_at": datetime.now(UTC).isoformat()})
                self.lake.put_raw_text(ended.model_dump_json(), *where.parts[1:], STARTUP_FILE)

    def on_kill(self) -> None:
        """Delete the pod (the provider's on_kill)."""
        if self.pod is not None:
            self.pod.on_kill()
