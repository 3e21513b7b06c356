"""Does a model fit a node, and how much KV cache to give it (VLLM_CPU_KVCACHE_SPACE).

Budget of a node, in MiB (infra/README.md has the formula with worked examples):
  Karpenter's allocatable for the type (accelbench.sizing.karpenter)
  - the DaemonSets every node runs (accelbench.sizing.daemonsets)
  - the load-generator container (loadgen_memory_mib) - the XCom sidecar (XCOM_SIDECAR_MEMORY_MIB)
  = the server container's limit, of which FIT_FRACTION may be planned; the rest absorbs
  allocator fragmentation and page cache of the mmapped checkpoint.
CPU: whole cores (the static CPU manager gives Guaranteed containers exclusive cores only for whole CPUs):
the load generator's core and the server's must fit both the allocatable CPU (with the DaemonSets and the
XCom sidecar) and the cores the static CPU manager can hand out (all but the reserved one).
Inside the plan: weights + process overhead (API server, engine, worker each import torch)
+ activation headroom + KV cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from accelbench.core.spec import LoadPlan
from accelbench.sizing.bandwidth import BandwidthAdvisory, advisory
from accelbench.sizing.daemonsets import DaemonSet, node_daemonset_requests
from accelbench.sizing.karpenter import Allocatable, allocatable, exclusive_cpus
from accelbench.sizing.model_config import ModelShape

GIB = 1024**3
MIB = 1024**2
LOADGEN_CPU = 1
# The most requests the load generator keeps in flight: the highest concurrency a campaign may ask for, and
# the cap of a Poisson level (an overloaded server would otherwise pile every prompt up in the client).
LOADGEN_MAX_IN_FLIGHT = 1024
# The load-generator container's memory, from benchmarks/pod_reserves.py (RESULTS.md, "Pod reserves"): the
# driver + warm `vllm bench serve` tree peaked at 944 MiB RSS (931 charged) at 1024 in flight with a
# 151,665-token tokenizer, 1,286 MiB at 10,000 prompts of 4096/512, growing ~14 MiB per extra level and
# ~75-116 B per output token of each prompt (the per-request timings it keeps). Sized with margin:
# 1,280 MiB + prompts x (8 B x input + 128 B x output), rounded up to 64 MiB.
LOADGEN_BASE_MIB = 1280
LOADGEN_BYTES_PER_INPUT_TOKEN = 8
LOADGEN_BYTES_PER_OUTPUT_TOKEN = 128
# lm-eval's `run` beside the driver (the quality step after the levels, accelbench.loadgen.quality_step), from
# benchmarks/pod_reserves.py --parts quality (RESULTS.md, "Pod reserves"): lm-eval's processes peaked at
# 464 MiB charged (200 questions); added to the container's memory, rounded up with margin.
LOADGEN_QUALITY_MIB = 512
# KubernetesPodOperator's XCom sidecar (a shell loop); requests = limits like every container of the pod.
XCOM_SIDECAR_CPU_M = 10
XCOM_SIDECAR_MEMORY_MIB = 32
FIT_FRACTION = 0.90
# vLLM CPU beyond weights and KV cache, from benchmarks/pod_reserves.py (vllm-cpu 0.32.0, x86-64): the server
# tree's peak RSS less KV and weights was 1,709 MiB (eager) / 1,771 MiB (compiled) with an 8,192-token
# vocabulary and 2,407 MiB (eager; 2,149 charged) with a 151,665-token one, plus ~80 MiB when compiled.
# The Worker, one per tensor-parallel rank, held 654-716 MiB of it (+313 MiB with the large vocabulary).
PROCESS_OVERHEAD_GIB = 2.5
PROCESS_OVERHEAD_PER_EXTRA_RANK_GIB = 1.0
MAX_BATCHED_TOKENS = 4096  # prefill chunk the activation headroom is sized for
ACTIVATION_BUFFERS = 4
DENSE_REFUSE_PARAMS = 13e9
DENSE_WARN_PARAMS = 8e9


@dataclass(frozen=True)
class NodeBudget:
    """What the server container gets on a node of one instance type, after everything else on it."""

    node: Allocatable
    server_memory_mib: int
    server_cpu: int
    loadgen_mib: int

    @property
    def memory_gib(self) -> float:
        return self.node.instance_memory_mib / 1024

    @property
    def server_memory_gib(self) -> float:
        return self.server_memory_mib / 1024

    @classmethod
    def for_instance(
        cls,
        *,
        memory_gib: float,
        vcpu: int,
        architecture: str,
        max_pods: int,
        loadgen_mib: int,
        daemonsets: tuple[DaemonSet, ...] = (),
    ) -> NodeBudget:
        """`daemonsets`: the tier's own beside the EKS add-ons every node runs (its device plugin)."""
        node = allocatable(
            memory_mib=round(memory_gib * 1024), vcpu=vcpu, architecture=architecture, max_pods=max_pods
        )
        ds_cpu_m, ds_memory_mib = node_daemonset_requests(daemonsets)
        memory = node.memory_mib - ds_memory_mib - loadgen_mib - XCOM_SIDECAR_MEMORY_MIB
        cpu_room = node.cpu_m - ds_cpu_m - XCOM_SIDECAR_CPU_M - LOADGEN_CPU * 1000
        cpu = min(cpu_room // 1000, exclusive_cpus(vcpu) - LOADGEN_CPU)
        return cls(node, max(0, memory), max(0, cpu), loadgen_mib)


@dataclass(kw_only=True)
class Fit:
    """How a model fits one server, the same shape on every tier (the CPU node's memory, the GPUs, the Neuron
    devices): what the weights, activations and runtime take of the usable memory, the KV cache left, and
    whether it holds what the server needs (one full-context sequence; on Neuron the compiled batch)."""

    weights_gib: float
    activation_gib: float
    overhead_gib: float
    usable_gib: float
    kv_needed_gib: float  # the least KV cache the server must hold
    kv_cache_gib: int  # what the server will hold, in whole GiB (ServerSpec.kv_cache_gib)
    max_full_context_sequences: int
    fits: bool
    shortfall_gib: float  # how much more memory it would need; 0 when it fits
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """What the plan task logs of a fit that holds."""
        return self.describe()

    def describe(self) -> str:
        return (
            f"weights {self.weights_gib:.2f} GiB + activations {self.activation_gib:.2f} GiB + overhead "
            f"{self.overhead_gib:.2f} GiB + KV {self.kv_cache_gib} GiB of {self.usable_gib:.2f} GiB usable"
        )


@dataclass(kw_only=True)
class FitPlan(Fit):
    """The CPU fit: the server container's share of the node (NodeBudget) holds weights, process overhead,
    activation headroom and the KV cache (VLLM_CPU_KVCACHE_SPACE)."""

    model: str
    total_params: int
    kv_bytes_per_token: int
    kv_requested_gib: float
    budget: NodeBudget
    advisory: BandwidthAdvisory

    def summary(self) -> str:
        return f"{self.describe()}. {self.advisory}"

    @property
    def min_kv_gib(self) -> float:
        return self.kv_needed_gib

    @property
    def needed_gib(self) -> float:
        """The least the server must plan: weights, overhead, activations and one full-context sequence."""
        return self.weights_gib + self.overhead_gib + self.activation_gib + math.ceil(self.min_kv_gib)

    def describe(self) -> str:
        return (
            f"weights {self.weights_gib:.2f} GiB + overhead {self.overhead_gib:.2f} GiB + activations "
            f"{self.activation_gib:.2f} GiB + KV {self.kv_cache_gib} GiB of {self.usable_gib:.2f} GiB usable "
            f"({FIT_FRACTION:.0%} of the server's {self.budget.server_memory_gib:.2f} GiB limit on a "
            f"{self.budget.memory_gib:g} GiB node, beside a {self.budget.loadgen_mib / 1024:.2f} GiB load "
            "generator)"
        )


def loadgen_memory_mib(prompts: int, input_len: int, output_len: int, range_ratio: float = 0.0) -> int:
    """The load-generator container's memory for a load plan (lengths at the top of their random range)."""
    top = 1 + range_ratio
    per_prompt = (
        LOADGEN_BYTES_PER_INPUT_TOKEN * input_len * top + LOADGEN_BYTES_PER_OUTPUT_TOKEN * output_len * top
    )
    mib = LOADGEN_BASE_MIB + prompts * per_prompt / MIB
    return math.ceil(mib / 64) * 64


def loadgen_memory(load: LoadPlan, *, quality: bool = False) -> int:
    """The load-generator container's memory for a campaign's load plan (its pod and the node budget), with
    room for lm-eval when it also measures a quantization matrix's quality after the levels."""
    mib = loadgen_memory_mib(load.prompts_per_level, load.input_len, load.output_len, load.range_ratio)
    return mib + (LOADGEN_QUALITY_MIB if quality else 0)


def process_overhead_gib(tensor_parallel_size: int) -> float:
    return PROCESS_OVERHEAD_GIB + PROCESS_OVERHEAD_PER_EXTRA_RANK_GIB * (tensor_parallel_size - 1)


def activation_gib(shape: ModelShape, context_len: int) -> float:
    tokens = min(context_len, MAX_BATCHED_TOKENS)
    width = shape.hidden_size + max(shape.intermediate_size, shape.moe_intermediate_size)
    return tokens * width * 2 * ACTIVATION_BUFFERS / GIB


def plan_fit(
    shape: ModelShape,
    *,
    budget: NodeBudget,
    vcpu: int,
    numa_nodes: int,
    tensor_parallel_size: int,
    generation: str,
    context_len: int,
    concurrency: int,
) -> FitPlan:
    """Size the KV cache for context x concurrency, clamped to what fits, and say whether anything fits."""
    weights = shape.weight_bytes()
    weights_gib = weights / GIB
    per_token = shape.kv_bytes_per_token()
    requested = per_token * context_len * concurrency / GIB
    min_kv = max(1.0, per_token * context_len / GIB)  # at least one full-context sequence
    act = activation_gib(shape, context_len)
    usable = budget.server_memory_gib * FIT_FRACTION
    overhead = process_overhead_gib(tensor_parallel_size)
    room = usable - weights_gib - overhead - act
    kv = min(math.ceil(requested), math.floor(room)) if room > 0 else 0
    kv = max(kv, math.ceil(min_kv)) if room >= math.ceil(min_kv) else kv
    fits = room >= math.ceil(min_kv)
    sequences = int(kv * GIB // (per_token * context_len)) if per_token and fits else 0
    plan = FitPlan(
        model=shape.name,
        total_params=shape.total_params(),
        weights_gib=weights_gib,
        kv_bytes_per_token=per_token,
        kv_requested_gib=requested,
        kv_cache_gib=max(kv, 0),
        overhead_gib=overhead,
        activation_gib=act,
        usable_gib=usable,
        budget=budget,
        kv_needed_gib=min_kv,
        fits=fits,
        shortfall_gib=max(
            0.0, (weights_gib + overhead + act + math.ceil(min_kv)) / FIT_FRACTION - budget.server_memory_gib
        ),
        max_full_context_sequences=sequences,
        advisory=advisory(generation, vcpu, numa_nodes, weights),
    )
    if fits and sequences < concurrency:
        plan.warnings.append(
            f"KV cache clamped to {kv} GiB: concurrency {concurrency} x context {context_len} needs "
            f"{requested:.1f} GiB; at most {sequences} full-context sequences run at once, the rest queue"
        )
    return plan
