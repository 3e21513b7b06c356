"""Checks that refuse a campaign in planning instead of letting a pod crash on it."""

from __future__ import annotations

import re

from accelbench.campaign.problems import Problem
from accelbench.campaign.request import ENGINE_ARG_PATTERN, CampaignRequest
from accelbench.runtime.recipes import MANAGED_ARGS
from accelbench.sizing.fit import DENSE_REFUSE_PARAMS, DENSE_WARN_PARAMS
from accelbench.sizing.model_config import ModelShape

# Engine flags that are meaningless or harmful on CPU, with why.
CPU_FORBIDDEN_ARGS = {
    "--kv-cache-dtype": "is set by the kv_cache_dtype field (FP8 KV cache is not supported on CPU)",
    "--distributed-executor-backend": "CPU runs single-node with the mp executor",
    "--data-parallel-size": "data-parallel deployment is not supported on CPU",
    "--data-parallel-address": "data-parallel deployment is not supported on CPU",
    "--pipeline-parallel-size": "CPU parallelism is tensor-parallel across NUMA nodes only",
    "--kv-transfer-config": "disaggregated prefill/decode is not supported on CPU",
}
NOT_ON_ARM_CPU = {"awq", "gptq", "fp8", "bitsandbytes", "marlin", "gptq_marlin", "awq_marlin"}
SAFE_ARG = re.compile(ENGINE_ARG_PATTERN)  # the campaign form checks the same pattern
INT_SCHEMES = {"int8": (8, "W8A8"), "int4": (4, "W4A8")}
INT_CAVEATS = {
    "int8": "compressed-tensors W8A8 exists in vLLM's CPU code, but the stable support matrix lists it "
    "for x86 only: verify it on Arm for this vLLM CPU version",
    "int4": "compressed-tensors W4A8 runs on Arm through KleidiAI (documented)",
}


# Managed flags whose value a campaign field (or the plan) sets, named in the refusal.
SET_BY = {
    "--gpu-memory-utilization": "gpu_memory_utilization (GPU types; a CPU server's KV cache is sized by "
    "VLLM_CPU_KVCACHE_SPACE from the memory fit)",
    "--max-num-seqs": "the largest concurrency (a Neuron server's compiled batch)",
    "--tensor-parallel-size": "tensor_parallel_size",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--dtype": "dtype",
    "--max-model-len": "the workloads' longest prompt and output",
}

# vLLM's short aliases of long flags, and flags no campaign may pass in any spelling.
SHORT_ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-q": "--quantization",
}
DENIED_ARGS = {
    "--config": "would let a file set any engine flag, bypassing these checks",
    "--trust-remote-code": "runs code from the model repository inside the server",
    "--hf-token": "would put a credential into the pod spec and the logs (the token is a mounted Secret)",
    "--allowed-local-media-path": "lets requests read files from the server's filesystem",
}


def canonical_flag(arg: str) -> str:
    """'--tensor_parallel_size=4' -> '--tensor-parallel-size'; '-tp' -> '--tensor-parallel-size'."""
    flag = arg.split("=", 1)[0]
    if flag in SHORT_ALIASES:
        return SHORT_ALIASES[flag]
    return "--" + flag.lstrip("-").replace("_", "-") if flag.startswith("--") else flag


def _abbreviates(flag: str, known: set[str]) -> str | None:
    """argparse accepts unambiguous prefixes: '--tensor-parallel' means '--tensor-parallel-size'."""
    return next((k for k in sorted(known) if k != flag and k.startswith(flag)), None)


def check_deployment(req: CampaignRequest, cpu: bool) -> list[Problem]:
    """One server per instance type on one node, on every tier (multi-node serving is not built)."""
    if req.deployment_mode == "single":
        return []
    why = (
        "vLLM CPU serves on one node with the mp executor; distributed and disaggregated deployments are "
        "not supported"
        if cpu
        else "this suite runs one server per instance type on one node (tensor parallel within the node); "
        "multi-node and disaggregated deployments are not built"
    )
    return [Problem("deployment_mode", req.deployment_mode, why)]


def check_cpu_request(req: CampaignRequest, cpu_types: list[str] | None = None) -> list[Problem]:
    """The request's fields the CPU tier cannot honour. Engine args go to every server of the campaign, so a
    GPU knob is refused while any CPU type (`cpu_types`, named in a mixed campaign) is in it."""
    problems = []
    on = f" (the CPU types of this campaign: {', '.join(cpu_types)})" if cpu_types else ""
    if req.kv_cache_dtype.lower().startswith("fp8"):
        problems.append(
            Problem(
                "kv_cache_dtype",
                req.kv_cache_dtype,
                f"FP8 KV cache is not supported on CPU (it falls back or errors); use auto{on}",
            )
        )
    for i, arg in enumerate(req.extra_engine_args):
        flag = canonical_flag(arg)
        target = flag if flag in CPU_FORBIDDEN_ARGS else _abbreviates(flag, set(CPU_FORBIDDEN_ARGS))
        if target:
            problems.append(
                Problem(f"extra_engine_args[{i}]", arg, f"{target} {CPU_FORBIDDEN_ARGS[target]}{on}")
            )
    return problems


def check_engine_args(req: CampaignRequest) -> list[Problem]:
    problems = []
    owned = set(MANAGED_ARGS)
    for i, arg in enumerate(req.extra_engine_args):
        flag = canonical_flag(arg)
        where = f"extra_engine_args[{i}]"
        if not SAFE_ARG.match(arg):
            problems.append(Problem(where, arg, "only letters, digits and _ . , : = / + @ - are allowed"))
        elif not flag.startswith("--"):
            problems.append(Problem(where, arg, "use the long form of the flag (--name or --name=value)"))
        elif denied := (flag if flag in DENIED_ARGS else _abbreviates(flag, set(DENIED_ARGS))):
            problems.append(Problem(where, arg, f"{denied} is not allowed: it {DENIED_ARGS[denied]}"))
        elif flag in owned or _abbreviates(flag, owned):
            target = str(flag if flag in owned else _abbreviates(flag, owned))
            by = SET_BY.get(target, "the campaign fields")
            problems.append(Problem(where, arg, f"{target} is set by the planner from {by}"))
    return problems


def check_cpu_model(req: CampaignRequest, shape: ModelShape, warnings: list[str]) -> list[Problem]:
    """Quantization formats and model size rules for the CPU tier."""
    problems = []
    quant = shape.quantization
    if quant and (quant.method in NOT_ON_ARM_CPU or quant.weight_type == "float"):
        problems.append(
            Problem(
                "model",
                req.model,
                f"{quant.method} {quant.scheme} checkpoints do not run on Arm CPU; "
                "use a compressed-tensors W4A8 or W8A8 checkpoint",
            )
        )
    if req.quantization in INT_SCHEMES:
        bits, scheme = INT_SCHEMES[req.quantization]
        if not (
            quant
            and quant.method == "compressed-tensors"
            and quant.weight_type == "int"
            and quant.weight_bits == bits
            and quant.activation_bits == 8
        ):
            have = f"{quant.method} {quant.scheme}" if quant else "unquantized"
            problems.append(
                Problem(
                    "quantization",
                    req.quantization,
                    f"{req.quantization} on CPU means a compressed-tensors {scheme} "
                    f"checkpoint; {req.model} is {have}",
                )
            )
        warnings.append(INT_CAVEATS[req.quantization])
    params = shape.total_params()
    if quant is None and not shape.is_moe:
        billions = params / 1e9
        if params > DENSE_REFUSE_PARAMS:
            problems.append(
                Problem(
                    "model",
                    req.model,
                    f"dense unquantized model of ~{billions:.1f}B parameters is refused on CPU (limit "
                    f"~{DENSE_REFUSE_PARAMS / 1e9:.0f}B): use a quantized checkpoint of it, e.g. "
                    "compressed-tensors W4A8 (quantization=int4) or W8A8 (quantization=int8)",
                )
            )
        elif params >= DENSE_WARN_PARAMS:
            warnings.append(
                f"{req.model}: dense unquantized ~{billions:.1f}B parameters is slow on CPU "
                "(8B-13B); a W4A8/W8A8 checkpoint decodes faster"
            )
    if req.dtype != "bfloat16":
        warnings.append(f"dtype {req.dtype!r} forced to bfloat16 on CPU (float16 is unstable on torch CPU)")
    return problems
