"""Karpenter's published allocatable figures (shared/reference/karpenter-allocatable-al2023.csv) and the
requests of a pod as the scheduler counts them: what "this pod gets a node" is checked against."""

from __future__ import annotations

import csv
from functools import cache
from typing import Any

from accelbench.tiers import GPU, NEURON
from kubernetes.utils import parse_quantity

from tests.support.paths import REPO
from tests.support.servers import missing

REFERENCE = REPO.parent / "shared" / "reference" / "karpenter-allocatable-al2023.csv"
# The pod's device resource and the CSV column of the node's, per tier.
DEVICES = {
    GPU.name: (GPU.placement.device_resource, "allocatable_nvidia_gpu"),
    NEURON.name: (NEURON.placement.device_resource, "allocatable_neuron"),
}


@cache
def reference() -> dict[str, dict[str, str]]:
    if not REFERENCE.is_file():
        missing(f"Karpenter's allocatable table {REFERENCE} (shared/ beside the repository)")
    with REFERENCE.open(newline="") as fh:
        return {row["instance_type"]: row for row in csv.DictReader(fh)}


def millicores(quantity: str) -> int:
    return int(parse_quantity(quantity) * 1000)


def mebibytes(quantity: str) -> float:
    return float(parse_quantity(quantity)) / 2**20


def pod_requests(pod: dict[str, Any]) -> dict[str, float]:
    """The pod's effective requests as the scheduler counts them (Kubernetes sidecar rules): app
    containers plus restartable init containers, or a plain init container plus the sidecars before it."""
    spec = pod["spec"]
    total: dict[str, float] = {}
    peak: dict[str, float] = {}
    for container in spec.get("initContainers", []):
        requests = container.get("resources", {}).get("requests", {})
        if container.get("restartPolicy") == "Always":
            for k, v in requests.items():
                total[k] = total.get(k, 0) + float(parse_quantity(v))
        else:
            for k, v in requests.items():
                peak[k] = max(peak.get(k, 0), total.get(k, 0) + float(parse_quantity(v)))
    for container in spec["containers"]:
        for k, v in container.get("resources", {}).get("requests", {}).items():
            total[k] = total.get(k, 0) + float(parse_quantity(v))
    return {k: max(total.get(k, 0), peak.get(k, 0)) for k in total.keys() | peak.keys()}
