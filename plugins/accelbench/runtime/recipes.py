"""Per-tier server recipes: the image, the engine arguments and the environment of a vLLM server.

The same ServerSpec yields the same arguments in a pod and in a local process.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import ClassVar

from accelbench.config import Settings, env_name
from accelbench.core.spec import AcceleratorType, Runtime, ServerSpec
from accelbench.errors import ConfigError

log = logging.getLogger(__name__)
SERVER_PORT = 8000
CPU_DTYPE = "bfloat16"  # float16 is unstable on torch CPU; vLLM's Arm path is BF16
HF_TOKEN_ENV = "HF_TOKEN"
# Arguments the planner owns: a user may not pass them as extra engine args.
MANAGED_ARGS = (
    "--served-model-name",
    "--dtype",
    "--tensor-parallel-size",
    "--max-model-len",
    "--host",
    "--port",
    "--revision",
    "--quantization",
    "--kv-cache-dtype",
    "--model",
)


@dataclass(frozen=True)
class Recipe:
    """How one tier runs vLLM. Subclasses set the image and the tier-specific knobs."""

    runtime: ClassVar[Runtime]
    accelerator_type: ClassVar[AcceleratorType]
    repository_field: ClassVar[str]  # the Settings field of the image repository (a mirror may replace it)
    default_version: ClassVar[str]

    @property
    def repository_setting(self) -> str:
        return env_name(self.repository_field)

    @property
    def default_repository(self) -> str:
        return str(Settings.model_fields[self.repository_field].default)

    def repository(self) -> str:
        value = getattr(Settings.from_env(self.repository_field), self.repository_field)
        return str(value)

    def tag(self, version: str) -> str:
        return f"v{version.removeprefix('v')}"

    def image(self, version: str) -> str:
        return f"{self.repository()}:{self.tag(version)}"

    def tier_args(self, spec: ServerSpec) -> list[str]:
        return []

    def tier_env(self, spec: ServerSpec) -> dict[str, str]:
        return {}

    def args(self, spec: ServerSpec, host: str = "0.0.0.0", port: int = SERVER_PORT) -> list[str]:
        """`vllm serve` arguments; the image's ENTRYPOINT is `vllm serve`, so the model comes first."""
        args = [
            spec.model,
            "--served-model-name",
            spec.served_model_name,
            "--dtype",
            spec.dtype,
            "--tensor-parallel-size",
            str(spec.tensor_parallel_size),
            "--max-model-len",
            str(spec.max_model_len),
            "--host",
            host,
            "--port",
            str(port),
        ]
        if spec.kv_cache_dtype != "auto":
            args += ["--kv-cache-dtype", spec.kv_cache_dtype]
        if spec.model_revision:
            args += ["--revision", spec.model_revision]
        return [*args, *self.tier_args(spec), *spec.extra_engine_args]

    def env(self, spec: ServerSpec) -> dict[str, str]:
        """Plain environment; the HF token is never here (it comes from a Secret)."""
        return {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", **self.tier_env(spec)}


@dataclass(frozen=True)
class VllmCpu(Recipe):
    runtime: ClassVar[Runtime] = "vllm-cpu"
    accelerator_type: ClassVar[AcceleratorType] = "cpu"
    repository_field: ClassVar[str] = "vllm_cpu_image_repository"
    # Used only when the catalog's runtime_versions has no vllm-cpu row (FACTS.md: v0.18.0+ seen).
    default_version: ClassVar[str] = "0.18.0"
    omp_threads_bind: str = "auto"

    def tag(self, version: str) -> str:
        return f"{super().tag(version)}-arm64"  # the arm64-only tag; never the multi-arch one

    def tier_env(self, spec: ServerSpec) -> dict[str, str]:
        # Always set: unset, some versions take half the host's RAM per NUMA node. vLLM applies it to
        # every tensor-parallel rank, so the planned total is split across the ranks.
        per_rank = max(1, math.ceil(spec.kv_cache_gib / spec.tensor_parallel_size))
        return {
            "VLLM_CPU_KVCACHE_SPACE": str(per_rank),
            "VLLM_CPU_OMP_THREADS_BIND": self.omp_threads_bind,
        }


@dataclass(frozen=True)
class VllmGpu(Recipe):
    runtime: ClassVar[Runtime] = "vllm-gpu"
    accelerator_type: ClassVar[AcceleratorType] = "gpu"
    repository_field: ClassVar[str] = "vllm_gpu_image_repository"
    default_version: ClassVar[str] = "0.18.0"
    gpu_memory_utilization: float = 0.90

    def tier_args(self, spec: ServerSpec) -> list[str]:
        return ["--gpu-memory-utilization", f"{self.gpu_memory_utilization:.2f}"]


@dataclass(frozen=True)
class VllmNeuron(Recipe):
    runtime: ClassVar[Runtime] = "vllm-neuron"
    accelerator_type: ClassVar[AcceleratorType] = "neuron"
    repository_field: ClassVar[str] = "vllm_neuron_image_repository"

    default_version: ClassVar[str] = "0.18.0"

    def tag(self, version: str) -> str:
        return version.removeprefix("v")

    def tier_args(self, spec: ServerSpec) -> list[str]:
        return ["--device", "neuron"]


RECIPES: dict[str, Recipe] = {r.runtime: r for r in (VllmCpu(), VllmGpu(), VllmNeuron())}


def recipe_for(runtime: str, field: str = "runtime") -> Recipe:
    try:
        return RECIPES[runtime]
    except KeyError:
        raise ConfigError(field, runtime, f"expected one of {', '.join(RECIPES)}") from None
