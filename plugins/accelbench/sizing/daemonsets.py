"""The DaemonSets that run on every benchmark node, and what they request.

They are not in a node's allocatable: Karpenter adds their requests to the pod's when it picks a node, so
the benchmark pod must leave room for them. These are the EKS add-ons that tolerate every taint (our
NodePools are tainted, so nothing else lands there): the VPC CNI, kube-proxy, the EKS Pod Identity agent
(infra/README.md requires it) and the EBS CSI node plugin (counted although the benchmark pods mount no EBS
volume, because most clusters install the add-on and its node plugin tolerates all taints). GPU and Neuron
nodes also run their tier's device plugin (each tier's Placement.daemonsets, accelbench.tiers).
A DaemonSet pod's request is max(sum of its containers, its largest init container), as the scheduler
counts it. A cluster that runs more node agents on these pools (log shippers, monitoring) declares their
summed requests in ACCELBENCH_EXTRA_DAEMONSET_REQUESTS, e.g. "cpu=200m,memory=256Mi".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from accelbench.config import Settings, env_name
from accelbench.errors import ConfigError

EXTRA_SETTING = env_name("extra_daemonset_requests")
_CPU = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>m?)")
_MEMORY = re.compile(r"(?P<n>\d+)(?P<unit>Ki|Mi|Gi|Ti|k|M|G|T)?")
_BYTES = {
    "": 1,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
}


@dataclass(frozen=True)
class DaemonSet:
    name: str
    cpu_m: int
    memory_mib: int
    source: str  # where the requests were read


NODE_DAEMONSETS = (
    DaemonSet(
        "kube-system/aws-node",
        50,
        0,
        "VPC CNI add-on (v1.14-v1.19 manifests): aws-node 25m + aws-eks-nodeagent 25m; init aws-vpc-cni-init "
        "25m; no memory requests",
    ),
    DaemonSet("kube-system/kube-proxy", 100, 0, "EKS kube-proxy add-on: cpu 100m, no memory request"),
    DaemonSet(
        "kube-system/eks-pod-identity-agent",
        0,
        0,
        "aws/eks-pod-identity-agent chart (helm template test data): resources {}",
    ),
    DaemonSet(
        "kube-system/ebs-csi-node",
        10,
        40,
        "aws-ebs-csi-driver chart values: node 10m/40Mi, sidecars resources {}; node.tolerateAllTaints true",
    ),
)
DAEMONSETS_CPU_M = sum(d.cpu_m for d in NODE_DAEMONSETS)
DAEMONSETS_MEMORY_MIB = sum(d.memory_mib for d in NODE_DAEMONSETS)


def extra_requests(raw: str | None = None) -> tuple[int, int]:
    """(millicores, MiB) of the cluster's own node DaemonSets, from ACCELBENCH_EXTRA_DAEMONSET_REQUESTS."""
    if raw is None:
        raw = Settings.from_env("extra_daemonset_requests").kubernetes.extra_daemonset_requests
    raw = raw.strip()

    cpu_m, memory_mib = 0, 0
    for part in filter(None, (p.strip() for p in raw.split(","))):
        key, _, value = part.partition("=")
        cpu, memory = _CPU.fullmatch(value.strip()), _MEMORY.fullmatch(value.strip())
        if key.strip() == "cpu" and cpu:
            cpu_m = int(float(cpu["n"]) * (1 if cpu["unit"] else 1000))
        elif key.strip() == "memory" and memory:
            memory_mib = -(-int(memory["n"]) * _BYTES[memory["unit"] or ""] // 2**20)
        else:
            raise ConfigError(
                EXTRA_SETTING, raw, 'expected "cpu=<quantity>,memory=<quantity>", e.g. cpu=200m,memory=256Mi'
            )
    return cpu_m, memory_mib


def node_daemonsets(tier_daemonsets: tuple[DaemonSet, ...] = ()) -> tuple[DaemonSet, ...]:
    """Every DaemonSet a benchmark node runs: the EKS add-ons and its tier's own (a tier's Placement)."""
    return NODE_DAEMONSETS + tier_daemonsets


def node_daemonset_requests(tier_daemonsets: tuple[DaemonSet, ...] = ()) -> tuple[int, int]:
    """(millicores, MiB) a benchmark node's DaemonSets request: the EKS add-ons, its tier's own (the device
    plugin) and the extra."""
    cpu_m, memory_mib = extra_requests()
    ours = node_daemonsets(tier_daemonsets)
    return sum(d.cpu_m for d in ours) + cpu_m, sum(d.memory_mib for d in ours) + memory_mib
