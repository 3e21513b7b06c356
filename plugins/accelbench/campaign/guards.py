"""Checks of the request that hold on every tier: the engine flags a campaign may pass, one node per server.
What a tier refuses of its own (CPU: FP8 KV cache, GPU-only flags, quantization formats) its Tier says."""

from __future__ import annotations

import re

from accelbench.campaign.request import ENGINE_ARG_PATTERN, CampaignRequest
from accelbench.core.problems import Problem
from accelbench.runtime.engine_args import canonical_flag, matching
from accelbench.runtime.recipes import MANAGED_ARGS

SAFE_ARG = re.compile(ENGINE_ARG_PATTERN)  # the campaign form checks the same pattern
# Managed flags whose value a campaign field (or the plan) sets, named in the refusal. A flag that only one
# tier's planner sets is that tier's to refuse (Tier.request_problems: the Neuron tier's --max-num-seqs).
SET_BY = {
    "--gpu-memory-utilization": "gpu_memory_utilization (GPU types; a CPU server's KV cache is sized by "
    "VLLM_CPU_KVCACHE_SPACE from the memory fit)",
    "--tensor-parallel-size": "tensor_parallel_size",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--dtype": "dtype",
    "--max-model-len": "the workloads' longest prompt and output",
}
# Flags no campaign may pass in any spelling.
DENIED_ARGS = {
    "--config": "would let a file set any engine flag, bypassing these checks",
    "--trust-remote-code": "runs code from the model repository inside the server",
    "--hf-token": "would put a credential into the pod spec and the logs (the token is a mounted Secret)",
    "--allowed-local-media-path": "lets requests read files from the server's filesystem",
}
SINGLE_NODE = (
    "this suite runs one server per instance type on one node (tensor parallel within the node); multi-node "
    "and disaggregated deployments are not built"
)


def check_deployment(req: CampaignRequest, reason: str | None = None) -> list[Problem]:
    """One server per instance type on one node, on every tier (multi-node serving is not built); `reason`:
    a tier's own words for why (Tier.single_node_reason)."""
    if req.deployment_mode == "single":
        return []
    return [Problem("deployment_mode", req.deployment_mode, reason or SINGLE_NODE)]


def check_engine_args(req: CampaignRequest) -> list[Problem]:
    problems = []
    for i, arg in enumerate(req.extra_engine_args):
        flag = canonical_flag(arg)
        where = f"extra_engine_args[{i}]"
        if not SAFE_ARG.match(arg):
            problems.append(Problem(where, arg, "only letters, digits and _ . , : = / + @ - are allowed"))
        elif not flag.startswith("--"):
            problems.append(Problem(where, arg, "use the long form of the flag (--name or --name=value)"))
        elif denied := matching(flag, DENIED_ARGS):
            problems.append(Problem(where, arg, f"{denied} is not allowed: it {DENIED_ARGS[denied]}"))
        elif target := matching(flag, MANAGED_ARGS):
            by = SET_BY.get(target, "the campaign fields")
            problems.append(Problem(where, arg, f"{target} is set by the planner from {by}"))
    return problems
