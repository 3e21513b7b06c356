"""Does a model fit the accelerators of a GPU or Neuron node, and how many ranks may it be split over.

GPU (vLLM on CUDA): vLLM takes `--gpu-memory-utilization` of each GPU for everything it holds (weights,
the activation peak it profiles, the CUDA context and graphs, the KV cache) and refuses to start when the KV
cache left cannot hold one sequence of `--max-model-len`. The plan below mirrors that so a campaign that
would fail so is refused in planning, and says how many full-context sequences the KV cache will hold.
Neuron (vLLM on NeuronCores): the model is compiled for a fixed batch (`--max-num-seqs`) and its KV cache is
allocated for that batch at `--max-model-len` in device memory (HBM) up front, so weights plus that whole
KV cache must fit the devices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from accelbench.sizing.fit import GIB, activation_gib
from accelbench.sizing.model_config import ModelShape

# CUDA context, cuBLAS/NCCL workspaces and captured CUDA graphs: vLLM counts them inside
# --gpu-memory-utilization ("non-torch memory" and "CUDA graphs" in its start-up log). A planning estimate
# per GPU, not a measurement: the start-up log of a real run says the figure for that GPU and version.
GPU_RUNTIME_OVERHEAD_GIB = 1.0
# Device memory a Neuron model may plan: the rest holds the runtime's scratchpad and the compiled graphs.
NEURON_FIT_FRACTION = 0.90


@dataclass
class AcceleratorFit:
    """What the devices of one node hold for a model: weights, activations, runtime and KV cache, in GiB."""

    tier: str
    devices: int  # GPUs or Neuron devices the server uses
    memory_per_device_gib: float
    usable_gib: float  # all devices together: the share vLLM (GPU) or the plan (Neuron) may take
    weights_gib: float
    activation_gib: float
    overhead_gib: float
    kv_needed_gib: float  # GPU: one full-context sequence; Neuron: max_num_seqs of them
    kv_room_gib: float  # what is left for the KV cache
    max_full_context_sequences: int
    warnings: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.kv_room_gib >= self.kv_needed_gib

    @property
    def shortfall_gib(self) -> float:
        return max(0.0, self.kv_needed_gib - self.kv_room_gib)

    def describe(self) -> str:
        devices = f"{self.devices} x {self.memory_per_device_gib:.1f} GiB"
        if self.tier == "gpu":
            used = (
                f"weights {self.weights_gib:.2f} GiB + activations {self.activation_gib:.2f} GiB + runtime "
                f"{self.overhead_gib:.2f} GiB"
            )
            share = f"--gpu-memory-utilization of {devices}"
        else:
            used, share = f"weights {self.weights_gib:.2f} GiB", f"{NEURON_FIT_FRACTION:.0%} of {devices}"
        room = f"{self.kv_room_gib:.2f} GiB of KV cache in {self.usable_gib:.2f} GiB usable"
        return f"{used} leave {room} ({share})"


def tensor_parallel_divides(shape: ModelShape, tp: int) -> bool:
    """vLLM shards attention heads over ranks: the heads must split evenly, and the KV heads either split
    evenly or are replicated (a rank count that is a multiple of them)."""
    kv = shape.num_kv_heads or shape.num_heads
    kv_ok = kv % tp == 0 if kv >= tp else tp % kv == 0
    return shape.num_heads % tp == 0 and kv_ok


def largest_tensor_parallel(shape: ModelShape, limit: int) -> int:
    """The most ranks, at most `limit`, that the model's heads split over (1 always does)."""
    return next(tp for tp in range(limit, 0, -1) if tensor_parallel_divides(shape, tp))


def plan_accelerator_fit(
    shape: ModelShape,
    *,
    tier: str,
    devices: int,
    memory_per_device_gib: float,
    tensor_parallel_size: int,
    context_len: int,
    concurrency: int,
    gpu_memory_utilization: float,
    kv_cache_dtype: str = "auto",
) -> AcceleratorFit:
    """GPU: the KV room under --gpu-memory-utilization of the GPUs the ranks use; Neuron: weights plus the
    KV cache of `concurrency` (= --max-num-seqs) full-context sequences under NEURON_FIT_FRACTION."""
    per_token = shape.kv_bytes_per_token(1 if kv_cache_dtype.startswith("fp8") else 2)
    per_sequence_gib = per_token * context_len / GIB
    weights = shape.weight_bytes() / GIB
    if tier == "gpu":
        used = tensor_parallel_size  # one GPU per rank; the pod still takes the whole node
        usable = gpu_memory_utilization * memory_per_device_gib * used
        act = activation_gib(shape, context_len) * used  # each rank profiles its own peak
        overhead = GPU_RUNTIME_OVERHEAD_GIB * used
        needed = per_sequence_gib
    else:
        used = devices
        usable = NEURON_FIT_FRACTION * memory_per_device_gib * devices
        act, overhead = 0.0, 0.0  # inside the compiled graphs and the fraction left over
        needed = per_sequence_gib * concurrency
    room = usable - weights - act - overhead
    sequences = int(room // per_sequence_gib) if per_sequence_gib > 0 and room > 0 else 0
    plan = AcceleratorFit(
        tier=tier,
        devices=used,
        memory_per_device_gib=memory_per_device_gib,
        usable_gib=usable,
        weights_gib=weights,
        activation_gib=act,
        overhead_gib=overhead,
        kv_needed_gib=needed,
        kv_room_gib=room,
        max_full_context_sequences=sequences,
    )
    if tier == "gpu" and plan.fits and sequences < concurrency:
        plan.warnings.append(
            f"the KV cache holds {sequences} full-context sequences of {context_len} tokens; at concurrency "
            f"{concurrency} the rest wait (or are preempted) unless their prompts are shorter"
        )
    return plan


def kv_cache_gib(plan: AcceleratorFit) -> int:
    """The KV cache the server will hold, in whole GiB (the ServerSpec field; vLLM sizes it itself)."""
    return max(0, math.floor(plan.kv_room_gib))
