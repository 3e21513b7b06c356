"""CPU memory-fit model: weights, KV cache, overhead and headroom against a node's memory."""
