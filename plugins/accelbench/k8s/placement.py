"""Where benchmark pods land: the one source of the NodePool names, labels and taints.

infra/ (Karpenter NodePool manifests) and the pod builder both read these; a test checks
that the manifests and the rendered pods agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.core.families import CPU_FAMILIES, GPU_FAMILIES, NEURON_FAMILIES

BENCHMARK_NAMESPACE = "accelbench-benchmarks"
BENCHMARK_SERVICE_ACCOUNT = "accelbench-benchmark"  # mapped to the IAM role that may write raw/ only
CPU_NODEPOOL = "accelbench-cpu"
GPU_NODEPOOL = "accelbench-gpu"
NEURON_NODEPOOL = "accelbench-neuron"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ARCH_LABEL = "kubernetes.io/arch"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str = "NoSchedule"


# The extended resource each accelerated tier's device plugin advertises, which the benchmark pod requests.
DEVICE_RESOURCES = {"gpu": "nvidia.com/gpu", "neuron": "aws.amazon.com/neuron"}
CPU_TAINTS = (Taint("accelbench.io/cpu", "true"), Taint("accelbench.io/dedicated", "true"))
GPU_TAINTS = (Taint("nvidia.com/gpu", "true"), Taint("accelbench.io/dedicated", "true"))
NEURON_TAINTS = (Taint("aws.amazon.com/neuron", "true"), Taint("accelbench.io/dedicated", "true"))
# Graviton families the CPU NodePool may launch: the families the catalog accepts for the CPU tier.
CPU_NODEPOOL_FAMILIES = tuple(sorted(CPU_FAMILIES))
# The GPU and Neuron NodePools launch exactly the catalog's families of their tier.
GPU_NODEPOOL_FAMILIES = tuple(sorted(GPU_FAMILIES))
NEURON_NODEPOOL_FAMILIES = tuple(sorted(NEURON_FAMILIES))
# Each tier's NodePool and the taints its pods tolerate.
NODEPOOLS = {"cpu": CPU_NODEPOOL, "gpu": GPU_NODEPOOL, "neuron": NEURON_NODEPOOL}
TAINTS = {"cpu": CPU_TAINTS, "gpu": GPU_TAINTS, "neuron": NEURON_TAINTS}
