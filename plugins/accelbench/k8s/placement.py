"""Where benchmark pods land, beside what each tier says (accelbench.tiers: its NodePool, node architecture,
taints and device resource): the namespace, the service account and the labels every pod uses.

infra/ (Karpenter NodePool manifests) and the pod builder both read these and the tiers' placements; tests
check that the manifests and the rendered pods agree.
"""

from __future__ import annotations

BENCHMARK_NAMESPACE = "accelbench-benchmarks"
BENCHMARK_SERVICE_ACCOUNT = "accelbench-benchmark"  # mapped to the IAM role that may write raw/ only
NODEPOOL_LABEL = "karpenter.sh/nodepool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ARCH_LABEL = "kubernetes.io/arch"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
