"""Memory fit on every tier: a model's weights, KV cache, overheads and headroom against what a Karpenter node
offers (the CPU server's container) or its devices (GPU, Neuron), and the node budget beside the DaemonSets
and the load generator. The tiers (accelbench.tiers) choose which fit applies."""
