"""Does a model fit a node, and how much KV cache to give it (VLLM_CPU_KVCACHE_SPACE).

Budget of a CPU node, all in GiB (documented in the README):
  EC2 memory x (1 - VM_MEMORY_OVERHEAD: what the kernel and firmware keep; Karpenter's default)
  - kube-reserved (255 MiB + 11 MiB x max pods) - eviction threshold (100 MiB)
  - daemonsets (DAEMONSET_RESERVE_GIB) - the loadgen container (LOADGEN_MEMORY_GIB)
  = the server container's limit, of which FIT_FRACTION may be planned; the rest absorbs
  allocator fragmentation and page cache of the mmapped checkpoint.
Inside the plan: weights + process overhead (~2 GB: API server, engine, worker each import
torch) + activation headroom + KV cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from accelbench.sizing.bandwidth import BandwidthAdvisory, advisory
from accelbench.sizing.model_config import ModelShape

GIB = 1024**3
VM_MEMORY_OVERHEAD = 0.075
MAX_PODS = 110
KUBE_RESERVED_GIB = (255 + 11 * MAX_PODS) / 1024
EVICTION_GIB = 100 / 1024
DAEMONSET_RESERVE_GIB = 0.5
LOADGEN_MEMORY_GIB = 2
LOADGEN_CPU = 1
SYSTEM_CPU = 1  # kube/system reserved CPU rounded up: the static CPU manager hands out whole cores
FIT_FRACTION = 0.90
PROCESS_OVERHEAD_GIB = 2.0
MAX_BATCHED_TOKENS = 4096  # prefill chunk the activation headroom is sized for
ACTIVATION_BUFFERS = 4
DENSE_REFUSE_PARAMS = 13e9
DENSE_WARN_PARAMS = 8e9


@dataclass(frozen=True)
class NodeBudget:
    memory_gib: float
    vcpu: int
    server_memory_gib: int
    server_cpu: int

    @classmethod
    def for_instance(cls, memory_gib: float, vcpu: int) -> NodeBudget:
        capacity = memory_gib * (1 - VM_MEMORY_OVERHEAD)
        spare = capacity - KUBE_RESERVED_GIB - EVICTION_GIB - DAEMONSET_RESERVE_GIB - LOADGEN_MEMORY_GIB
        return cls(memory_gib, vcpu, max(0, math.floor(spare)), max(0, vcpu - LOADGEN_CPU - SYSTEM_CPU))


@dataclass
class FitPlan:
    model: str
    total_params: int
    weights_gib: float
    kv_bytes_per_token: int
    kv_requested_gib: float
    kv_cache_gib: int
    overhead_gib: float
    activation_gib: float
    usable_gib: float
    budget: NodeBudget
    min_kv_gib: float
    fits: bool
    max_full_context_sequences: int
    advisory: BandwidthAdvisory
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"weights {self.weights_gib:.1f} GiB + overhead {self.overhead_gib:.1f} GiB + activations "
            f"{self.activation_gib:.1f} GiB + KV {self.kv_cache_gib} GiB of {self.usable_gib:.1f} GiB usable "
            f"({FIT_FRACTION:.0%} of the server's {self.budget.server_memory_gib} GiB limit on a "
            f"{self.budget.memory_gib:g} GiB node)"
        )


def activation_gib(shape: ModelShape, context_len: int) -> float:
    tokens = min(context_len, MAX_BATCHED_TOKENS)
    width = shape.hidden_size + max(shape.intermediate_size, shape.moe_intermediate_size)
    return tokens * width * 2 * ACTIVATION_BUFFERS / GIB


def plan_fit(
    shape: ModelShape,
    *,
    memory_gib: float,
    vcpu: int,
    numa_nodes: int,
    generation: str,
    context_len: int,
    concurrency: int,
) -> FitPlan:
    """Size the KV cache for context x concurrency, clamped to what fits, and say whether anything fits."""
    budget = NodeBudget.for_instance(memory_gib, vcpu)
    weights = shape.weight_bytes()
    weights_gib = weights / GIB
    per_token = shape.kv_bytes_per_token()
    requested = per_token * context_len * concurrency / GIB
    min_kv = max(1.0, per_token * context_len / GIB)  # at least one full-context sequence
    act = activation_gib(shape, context_len)
    usable = budget.server_memory_gib * FIT_FRACTION
    room = usable - weights_gib - PROCESS_OVERHEAD_GIB - act
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
        overhead_gib=PROCESS_OVERHEAD_GIB,
        activation_gib=act,
        usable_gib=usable,
        budget=budget,
        min_kv_gib=min_kv,
        fits=fits,
        max_full_context_sequences=sequences,
        advisory=advisory(generation, vcpu, numa_nodes, weights),
    )
    if fits and sequences < concurrency:
        plan.warnings.append(
            f"KV cache clamped to {kv} GiB: concurrency {concurrency} x context {context_len} needs "
            f"{requested:.1f} GiB; at most {sequences} full-context sequences run at once, the rest queue"
        )
    return plan
