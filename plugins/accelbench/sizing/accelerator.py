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
from dataclasses import dataclass

from accelbench.sizing.fit import GIB, Fit, activation_gib
from accelbench.sizing.model_config import ModelShape

# CUDA context, cuBLAS/NCCL workspaces and captured CUDA graphs: vLLM counts them inside
# --gpu-memory-utilization ("non-torch memory" and "CUDA graphs" in its start-up log). A planning estimate
# per GPU, not a measurement: the start-up log of a real run says the figure for that GPU and version.
GPU_RUNTIME_OVERHEAD_GIB = 1.0
# Device memory a Neuron model may plan: the rest holds the runtime's scratchpad and the compiled graphs.
NEURON_FIT_FRACTION = 0.90


@dataclass(kw_only=True)
class AcceleratorFit(Fit):
    """What the devices of one node hold for a model: weights, activations, runtime and KV cache, in GiB."""

    devices: int  # GPUs or Neuron devices the server uses
    memory_per_device_gib: float
    kv_room_gib: float  # what is left for the KV cache
    share: str  # what `usable_gib` is a share of, as describe() says it

    def describe(self) -> str:
        used = f"weights {self.weights_gib:.2f} GiB"
        if self.activation_gib or self.overhead_gib:
            used += f" + activations {self.activation_gib:.2f} GiB + runtime {self.overhead_gib:.2f} GiB"
        room = f"{self.kv_room_gib:.2f} GiB of KV cache in {self.usable_gib:.2f} GiB usable"
        return f"{used} leave {room} ({self.share})"


def tensor_parallel_divides(shape: ModelShape, tp: int) -> bool:
    """vLLM shards attention heads over ranks: the heads must split evenly, and the KV heads either split
    evenly or are replicated (a rank count that is a multiple of them)."""
    kv = shape.num_kv_heads or shape.num_heads
    kv_ok = kv % tp == 0 if kv >= tp else tp % kv == 0
    return shape.num_heads % tp == 0 and kv_ok


def largest_tensor_parallel(shape: ModelShape, limit: int) -> int:
    """The most ranks, at most `limit`, that the model's heads split over (1 always does)."""
    return next(tp for tp in range(limit, 0, -1) if tensor_parallel_divides(shape, tp))


def _accelerator_fit(
    shape: ModelShape,
    *,
    devices: int,
    memory_per_device_gib: float,
    usable_gib: float,
    share: str,
    context_len: int,
    per_sequence_gib: float,
    needed_gib: float,
    activation: float = 0.0,
    overhead: float = 0.0,
) -> AcceleratorFit:
    weights = shape.weight_bytes() / GIB
    room = usable_gib - weights - activation - overhead
    sequences = int(room // per_sequence_gib) if per_sequence_gib > 0 and room > 0 else 0
    return AcceleratorFit(
        devices=devices,
        memory_per_device_gib=memory_per_device_gib,
        usable_gib=usable_gib,
        share=share,
        weights_gib=weights,
        activation_gib=activation,
        overhead_gib=overhead,
        kv_needed_gib=needed_gib,
        kv_room_gib=room,
        kv_cache_gib=max(0, math.floor(room)),  # vLLM sizes it itself; the ServerSpec records it
        max_full_context_sequences=sequences,
        fits=room >= needed_gib,
        shortfall_gib=max(0.0, needed_gib - room),
    )


def kv_bytes_per_token(shape: ModelShape, kv_cache_dtype: str = "auto") -> int:
    return shape.kv_bytes_per_token(1 if kv_cache_dtype.startswith("fp8") else 2)


def plan_gpu_fit(
    shape: ModelShape,
    *,
    memory_per_device_gib: float,
    tensor_parallel_size: int,
    context_len: int,
    concurrency: int,
    gpu_memory_utilization: float,
    kv_cache_dtype: str = "auto",
) -> AcceleratorFit:
    """The KV room under --gpu-memory-utilization of the GPUs the ranks use (one GPU per rank; the pod
    still takes the whole node): it must hold one full-context sequence, as vLLM requires to start."""
    per_sequence_gib = kv_bytes_per_token(shape, kv_cache_dtype) * context_len / GIB
    used = tensor_parallel_size
    devices = f"{used} x {memory_per_device_gib:.1f} GiB"
    plan = _accelerator_fit(
        shape,
        devices=used,
        memory_per_device_gib=memory_per_device_gib,
        usable_gib=gpu_memory_utilization * memory_per_device_gib * used,
        share=f"--gpu-memory-utilization of {devices}",
        context_len=context_len,
        per_sequence_gib=per_sequence_gib,
        needed_gib=per_sequence_gib,
        activation=activation_gib(shape, context_len) * used,  # each rank profiles its own peak
        overhead=GPU_RUNTIME_OVERHEAD_GIB * used,
    )
    if plan.fits and plan.max_full_context_sequences < concurrency:
        plan.warnings.append(
            f"the KV cache holds {plan.max_full_context_sequences} full-context sequences of {context_len} "
            f"tokens; at concurrency {concurrency} the rest wait (or are preempted) unless their prompts "
            "are shorter"
        )
    return plan


def plan_neuron_fit(
    shape: ModelShape,
    *,
    devices: int,
    memory_per_device_gib: float,
    context_len: int,
    concurrency: int,
    kv_cache_dtype: str = "auto",
) -> AcceleratorFit:
    """Weights plus the KV cache of `concurrency` (= --max-num-seqs) full-context sequences under
    NEURON_FIT_FRACTION of the devices' memory; activations live inside the compiled graphs."""
    per_sequence_gib = kv_bytes_per_token(shape, kv_cache_dtype) * context_len / GIB
    return _accelerator_fit(
        shape,
        devices=devices,
        memory_per_device_gib=memory_per_device_gib,
        usable_gib=NEURON_FIT_FRACTION * memory_per_device_gib * devices,
        share=f"{NEURON_FIT_FRACTION:.0%} of {devices} x {memory_per_device_gib:.1f} GiB",
        context_len=context_len,
        per_sequence_gib=per_sequence_gib,
        needed_gib=per_sequence_gib * concurrency,
    )
