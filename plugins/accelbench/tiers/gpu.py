"""The GPU tier: NVIDIA GPUs (g5, g6, g6e, p5) with the vLLM OpenAI image, one rank per GPU as far as the
model's heads split, memory fit under --gpu-memory-utilization; locally, the NVIDIA driver's nvidia-smi."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from pydantic import Field

from accelbench.catalog.seed_file import InstanceSpec
from accelbench.config import TierSettings, setting
from accelbench.core.problems import Problem
from accelbench.core.spec import LoadPlan, ServerSpec, TierServerFields
from accelbench.runtime.recipes import VllmGpu
from accelbench.sizing.accelerator import (
    AcceleratorFit,
    largest_tensor_parallel,
    plan_gpu_fit,
    tensor_parallel_divides,
)
from accelbench.sizing.daemonsets import DaemonSet
from accelbench.sizing.fit import Fit
from accelbench.sizing.model_config import ModelShape
from accelbench.tiers.base import (
    LocalBuild,
    Placement,
    Ranks,
    ServerRequest,
    Sizing,
    Startup,
    Taint,
    Tier,
)

# nvidia-smi's stable CSV query (`nvidia-smi --help-query-gpu`): one line per GPU, units left off.
NVIDIA_SMI_QUERY = ("--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits")


@dataclass(frozen=True)
class Gpu:
    """One NVIDIA GPU as its driver reports it."""

    name: str
    memory_mib: int
    driver: str


def gpus(nvidia_smi: str | None = None) -> list[Gpu]:
    """The NVIDIA GPUs of this machine, from nvidia-smi (none when it is absent or fails: no GPU to use)."""
    exe = nvidia_smi or shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run(
            [exe, *NVIDIA_SMI_QUERY], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    found = []
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[1].isdigit():
            found.append(Gpu(parts[0], int(parts[1]), parts[2]))
    return found


def describe_gpus(found: list[Gpu]) -> str | None:
    """'1 x NVIDIA H200 (143771 MiB), driver 570.124.06': what a local GPU row was measured on."""
    if not found:
        return None
    kinds: dict[tuple[str, int], int] = {}
    for gpu in found:
        kinds[(gpu.name, gpu.memory_mib)] = kinds.get((gpu.name, gpu.memory_mib), 0) + 1
    text = " + ".join(f"{n} x {name} ({mib} MiB)" for (name, mib), n in kinds.items())
    return f"{text}, driver {found[0].driver}"


SETTINGS_TITLE = "GPU tier (vllm-gpu)"


class GpuTierSettings(TierSettings):
    """The GPU tier's image and local CUDA vLLM environment."""

    title: ClassVar[str] = SETTINGS_TITLE
    vllm_gpu_image_repository: str = setting(
        "vllm/vllm-openai",
        group=SETTINGS_TITLE,
        description="repository of the GPU tier's image (tag `v<version>`)",
    )
    vllm_gpu_python: str = setting(
        "",
        group=SETTINGS_TITLE,
        shown_type="path",
        shown_default="`.venv-vllm-gpu/bin/python`",
        description="interpreter of the optional CUDA vLLM environment (`scripts/vllm-gpu-env.sh`) that "
        "local mode serves GPU instance types with, on a worker with an NVIDIA GPU",
    )


class GpuServerFields(TierServerFields):
    """A GPU server's own field: the share of each GPU's memory vLLM may take (weights, activations, KV
    cache), which the fit planned against. None: vLLM's own default (0.9)."""

    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)

    def engine_args(self) -> list[str]:
        if self.gpu_memory_utilization is None:
            return []
        return ["--gpu-memory-utilization", f"{self.gpu_memory_utilization:g}"]


@runtime_checkable
class GpuRequest(ServerRequest, Protocol):
    """What the GPU tier reads of a request beyond every tier's fields."""

    @property
    def gpu_memory_utilization(self) -> float: ...


def _gpu_request(request: ServerRequest) -> GpuRequest:
    if not isinstance(request, GpuRequest):
        raise TypeError(f"a GPU server's request needs gpu_memory_utilization: {type(request).__name__}")
    return request


@dataclass(frozen=True)
class GpuTier(Tier):
    def ranks(self, spec: InstanceSpec) -> Ranks:
        return Ranks(spec.accelerator_count, "GPUs")

    def tensor_parallel(
        self, request: ServerRequest, spec: InstanceSpec, shape: ModelShape | None, warnings: list[str]
    ) -> tuple[int, list[Problem]]:
        """One rank per GPU, reduced to the most the model's heads split over (with a warning); a rank count
        the request sets that does not split them is refused, naming one that does."""
        tp, problems = super().tensor_parallel(request, spec, shape, warnings)
        if problems or shape is None or tensor_parallel_divides(shape, tp):
            return tp, problems
        limit = self.ranks(spec).limit
        if request.tensor_parallel_size:
            why = (
                f"{request.model}'s {shape.num_heads} attention heads ({shape.num_kv_heads} KV heads) do not "
                f"split over {tp} ranks; {largest_tensor_parallel(shape, limit)} do on {spec.instance_type}"
            )
            return tp, [Problem("tensor_parallel_size", tp, why)]
        fitted = largest_tensor_parallel(shape, limit)
        warnings.append(
            f"{spec.instance_type}: tensor parallel {fitted} of its {limit} GPUs: {request.model}'s "
            f"{shape.num_heads} attention heads ({shape.num_kv_heads} KV heads) do not split over {limit} "
            "(the pod still takes the node, and the report prices the node)"
        )
        return fitted, []

    def fit(self, sizing: Sizing) -> AcceleratorFit:
        return plan_gpu_fit(
            sizing.shape,
            memory_per_device_gib=sizing.instance.accelerator_memory_gib,
            tensor_parallel_size=sizing.ranks,
            context_len=sizing.request.context_len,
            concurrency=sizing.concurrency,
            gpu_memory_utilization=_gpu_request(sizing.request).gpu_memory_utilization,
            kv_cache_dtype=sizing.request.kv_cache_dtype,
        )

    def refusal(self, fit: Fit, sizing: Sizing, catalog: Mapping[str, InstanceSpec]) -> str:
        request = sizing.request
        return (
            f"{request.model} does not fit: {fit.describe()}; one full-context sequence "
            f"({request.context_len} tokens) needs {fit.kv_needed_gib:.2f} GiB: short by "
            f"{fit.shortfall_gib:.2f} GiB. raise gpu_memory_utilization, shorten the workload, or use a "
            "type with more GPU memory"
        )

    def server_fields(self, request: ServerRequest, load: LoadPlan) -> GpuServerFields:
        return GpuServerFields(gpu_memory_utilization=_gpu_request(request).gpu_memory_utilization)

    def devices_here(self) -> str | None:
        return describe_gpus(gpus())

    def local_problem(self) -> str | None:
        if gpus():
            return None
        return "a GPU type runs locally only on a worker with an NVIDIA GPU: nvidia-smi lists none here"

    def local_spec_problem(self, spec: ServerSpec) -> tuple[str, object, str] | None:
        """A GPU spec runs locally on this worker's own GPUs: enough of them for its tensor-parallel ranks."""
        found = gpus()
        if len(found) >= spec.tensor_parallel_size:
            return None
        why = (
            f"{spec.instance_type} plans {spec.tensor_parallel_size} GPU rank(s); this worker has "
            f"{describe_gpus(found) or 'no NVIDIA GPU'}"
        )
        return "tensor_parallel_size", spec.tensor_parallel_size, why


GPU = GpuTier(
    name="gpu",
    title="GPU (NVIDIA, the vLLM OpenAI image)",
    families=frozenset({"g5", "g6", "g6e", "p5"}),
    recipe=VllmGpu(),
    placement=Placement(
        nodepool="accelbench-gpu",
        architecture="amd64",
        taints=(Taint("nvidia.com/gpu", "true"), Taint("accelbench.io/dedicated", "true")),
        device_resource="nvidia.com/gpu",
        daemonsets=(
            DaemonSet(
                "kube-system/accelbench-nvidia-device-plugin",
                100,
                128,
                "infra/k8s/device-plugins/nvidia-device-plugin.yaml: requests = limits 100m/128Mi "
                "(NVIDIA's static manifest sets none)",
            ),
        ),
    ),
    # vLLM on CUDA captures graphs (and torch.compile's first run) before /health answers.
    startup=Startup(compile_base_s=300),
    local=LocalBuild("vllm_gpu_python", ".venv-vllm-gpu", "scripts/vllm-gpu-env.sh"),
    version_field="gpu_version",
    server_model=GpuServerFields,
    settings=GpuTierSettings,
)
