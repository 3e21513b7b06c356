"""Kubernetes objects for benchmark pods: placement on the Karpenter pools, the pod spec."""
