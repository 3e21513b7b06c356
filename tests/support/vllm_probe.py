"""Run in the vLLM environment (.venv-vllm): what vLLM itself computes from a model's config.json, for the
tests that hold our memory fit to it. Prints one JSON object: model folder -> KV-cache bytes per token (its
full-attention KV spec's page size per token x layers) and the tensor-parallel sizes its config check accepts.
"""

from __future__ import annotations

import json
import sys

import torch
import vllm.model_executor.models.registry as registry
from vllm.config import ModelConfig, ParallelConfig
from vllm.v1.kv_cache_interface import FullAttentionSpec

# vLLM inspects each architecture's model class in a subprocess, to keep CUDA uninitialised in the process
# that asked (a CPU build has no CUDA), unless its model-info cache has the answer: on a fresh machine one
# import of vLLM per architecture here (4 of them). The same inspection, in this process.
registry._run_in_subprocess = lambda fn: fn()

BLOCK = 16
found = {}
for path in sys.argv[1:]:
    model = ModelConfig(
        model=path, tokenizer=path, skip_tokenizer_init=True, dtype="bfloat16", max_model_len=2048
    )
    one = ParallelConfig(tensor_parallel_size=1)
    spec = FullAttentionSpec(
        block_size=BLOCK,
        num_kv_heads=model.get_num_kv_heads(one),
        head_size=model.get_head_size(),
        dtype=torch.bfloat16,
    )
    accepted = []
    for tp in range(1, 9):
        try:
            model.verify_with_parallel_config(ParallelConfig(tensor_parallel_size=tp))
        except ValueError:
            continue
        accepted.append(tp)
    found[path] = {
        "kv_bytes_per_token": spec.page_size_bytes // BLOCK * model.get_num_layers(one),
        "tp": accepted,
    }
print(json.dumps(found))
