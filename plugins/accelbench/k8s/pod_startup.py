"""A benchmark pod's start-up in phases, from what the Kubernetes API keeps of it
(accelbench.core.startup_phases's kubernetes phases): the pod's creation and PodScheduled condition, its
node's creation (Karpenter launched it for this pod when the node is younger than the pod), the server
container's start (after its image was pulled), and the load generator's start, which the kubelet allows only
once the server's startup probe passed (the server is a native sidecar). Timestamps are the API's, to the
second; the kubelet's own pull time is read from its Pulled event. Read before the pod is deleted
(accelbench.airflow.benchmark_pod)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from kubernetes.client import CoreV1Event, V1Node, V1Pod

from accelbench.core.startup_phases import KUBERNETES_BOUNDARIES, KUBERNETES_METHOD, Startup

# The kubelet's Pulled event: 'Successfully pulled image "x" in 23.4s (23.4s including waiting). ...'
PULLED = re.compile(r"Successfully pulled image .* in ([0-9.]+)(ms|s)\b")
NODECLAIM_KIND = "NodeClaim"  # Karpenter v1 makes a node's NodeClaim its owner


def _started(statuses: Sequence[Any] | None, name: str) -> datetime | None:
    for status in statuses or ():
        if status.name != name or status.state is None:
            continue
        for state in (status.state.running, status.state.terminated):
            if state is not None and state.started_at is not None:
                return state.started_at  # type: ignore[no-any-return]
    return None


def _scheduled(pod: V1Pod) -> datetime | None:
    for condition in (pod.status.conditions if pod.status else None) or ():
        if condition.type == "PodScheduled" and condition.status == "True":
            return condition.last_transition_time  # type: ignore[no-any-return]
    return None


def kubelet_pull_s(events: Sequence[CoreV1Event], container: str) -> float | None:
    """The pull time the kubelet reported for `container`'s image (0 when it was already on the node)."""
    for event in events:
        field = (event.involved_object.field_path or "") if event.involved_object else ""
        if not field.endswith(f"{{{container}}}") or event.reason != "Pulled":
            continue
        if found := PULLED.search(event.message or ""):
            value = float(found.group(1))
            return value / 1000 if found.group(2) == "ms" else value
        if "already present on machine" in (event.message or ""):
            return 0.0
    return None


def ran_s(statuses: Sequence[Any] | None, name: str) -> float | None:
    """How long a container that has ended ran (an init container: its start to its finish)."""
    for status in statuses or ():
        ended = status.state.terminated if status.name == name and status.state is not None else None
        if ended is not None and ended.started_at is not None and ended.finished_at is not None:
            ran: float = (ended.finished_at - ended.started_at).total_seconds()
            return max(0.0, ran)
    return None


def nodeclaim(node: V1Node | None) -> str | None:
    owners = (node.metadata.owner_references if node and node.metadata else None) or ()
    return next((o.name for o in owners if o.kind == NODECLAIM_KIND), None)


def pod_startup(
    pod: V1Pod,
    events: Sequence[CoreV1Event],
    node: V1Node | None,
    server: str,
    loadgen: str,
    weights: str | None = None,
) -> Startup | None:
    """The pod's start-up (None: it never got as far as its load generator's start, or has no creation
    time). A boundary the API does not have, or that is out of order, leaves its phase null."""
    created = pod.metadata.creation_timestamp if pod.metadata else None
    statuses = [*((pod.status.init_container_statuses or []) if pod.status else [])]
    statuses += (pod.status.container_statuses or []) if pod.status else []
    ready = _started(statuses, loadgen)
    if created is None or ready is None:
        return None
    at = {
        "scheduling_s": _scheduled(pod),
        "image_pull_s": _started(statuses, server),
        "server_start_s": ready,
    }
    phases: dict[str, float | None] = {}
    last = created
    for name in KUBERNETES_BOUNDARIES:
        when = at[name]
        if when is None or when < last:
            phases[name] = None
            continue
        phases[name] = (when - last).total_seconds()
        last = when
    node_created = node.metadata.creation_timestamp if node and node.metadata else None
    launched = (node_created - created).total_seconds() if node_created and node_created > created else None
    return Startup(
        execution_mode="kubernetes",
        started_at=created.isoformat(),
        ready_s=(ready - created).total_seconds(),
        phases=phases,
        figures={
            "node_launch_s": launched,
            "kubelet_pull_s": kubelet_pull_s(events, server),
            "weights_fetch_s": ran_s(statuses, weights) if weights else None,
        },
        nodeclaim=nodeclaim(node),
        method=KUBERNETES_METHOD,
    )
