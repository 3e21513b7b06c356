"""What a Karpenter node of an instance type offers pods (its allocatable), computed as Karpenter does.

Karpenter (AWS provider, pkg/providers/instancetype/types.go) picks a node for a pod only if the pod's
requests plus the node's DaemonSet requests fit under this allocatable, so a benchmark pod sized from any
other model may stay Pending for good. The model, for `amiFamily: AL2023` with Karpenter's defaults:

  memory = EC2 MiB (- 64 MiB of CMA on Graviton) - ceil(that x vmMemoryOverheadPercent 0.075)
           - kube-reserved (255 MiB + 11 MiB x the ENI-limited max pods) - eviction threshold (100 MiB)
  cpu    = EC2 vCPUs - kube-reserved cpu (6% of the first core, 1% of the second, 0.5% of cores 3-4,
           0.25% of the rest)

The max pods are the type's ENI-limited count (karpenter.k8s.aws/instance-pods), which the catalog carries
(`max_pods`). We leave `kubelet.maxPods` unset in the EC2NodeClass on purpose: for AL2023 both Karpenter
(`UsesENILimitedMemoryOverhead`) and nodeadm reserve kube memory for the ENI-limited count whatever
maxPods says, so a lower maxPods would give back no memory, only pod slots. tests/unit/test_node_budget.py
checks this model against Karpenter's published figures for every type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

VM_MEMORY_OVERHEAD_PERCENT = 0.075  # Karpenter's settings.vmMemoryOverheadPercent default
GRAVITON_CMA_MIB = 64  # "Gravitons have an extra 64 MiB of cma reserved memory that we can't use"
KUBE_RESERVED_BASE_MIB = 255
KUBE_RESERVED_PER_POD_MIB = 11
EVICTION_HARD_MIB = 100  # memory.available<100Mi
# kube-reserved CPU: (from millicore, to millicore, share), the kubelet/bottlerocket tiers Karpenter uses.
KUBE_RESERVED_CPU_TIERS = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))


@dataclass(frozen=True)
class Allocatable:
    """A node's allocatable and the terms it is computed from (messages, the docs' worked example)."""

    instance_memory_mib: int
    capacity_memory_mib: int  # after CMA and VM overhead
    kube_reserved_memory_mib: int
    eviction_mib: int
    memory_mib: int
    instance_cpu_m: int
    kube_reserved_cpu_m: int
    cpu_m: int
    max_pods: int


def kube_reserved_cpu_m(vcpu: int) -> int:
    total = 0
    for start, end, share in KUBE_RESERVED_CPU_TIERS:
        cpu_m = vcpu * 1000
        if cpu_m >= start:
            total += int((min(cpu_m, end) - start) * share)
    return total


def allocatable(*, memory_mib: int, vcpu: int, architecture: str, max_pods: int) -> Allocatable:
    """Karpenter's allocatable for a node of this shape (AL2023, default kubelet settings)."""
    mib = memory_mib - (GRAVITON_CMA_MIB if architecture == "arm64" else 0)
    capacity = mib - math.ceil(mib * VM_MEMORY_OVERHEAD_PERCENT)
    kube_mem = KUBE_RESERVED_BASE_MIB + KUBE_RESERVED_PER_POD_MIB * max_pods
    kube_cpu = kube_reserved_cpu_m(vcpu)
    return Allocatable(
        instance_memory_mib=memory_mib,
        capacity_memory_mib=capacity,
        kube_reserved_memory_mib=kube_mem,
        eviction_mib=EVICTION_HARD_MIB,
        memory_mib=capacity - kube_mem - EVICTION_HARD_MIB,
        instance_cpu_m=vcpu * 1000,
        kube_reserved_cpu_m=kube_cpu,
        cpu_m=vcpu * 1000 - kube_cpu,
        max_pods=max_pods,
    )


def exclusive_cpus(vcpu: int) -> int:
    """Whole cores the kubelet's static CPU manager can hand to Guaranteed containers: the reserved
    CPU (kube-reserved, no system-reserved) is rounded up to whole cores and kept in the shared pool."""
    return vcpu - math.ceil(kube_reserved_cpu_m(vcpu) / 1000)
