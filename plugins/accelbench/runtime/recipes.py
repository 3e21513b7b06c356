"""Per-tier server recipes: the image, the engine arguments and the environment of a vLLM server.

The same ServerSpec yields the same arguments in a pod and in a local process.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from accelbench.config import S3_ENDPOINT_SETTINGS, Settings, env_name, setting_default
from accelbench.core.spec import ServerSpec
from accelbench.errors import ConfigError
from accelbench.runtime.neuron import neuron_args, neuron_env, neuron_support_problem
from accelbench.runtime.tag_rules import NEURON_DLC_TAGS, VLLM_CPU_TAGS, VLLM_GPU_TAGS

if TYPE_CHECKING:  # the registry clients need httpx, which the load-generator image (it plans nothing) lacks
    from accelbench.runtime.sources import ReleaseSource

log = logging.getLogger(__name__)
SERVER_PORT = 8000
STREAMER = "runai_streamer"  # vLLM's load format for weights streamed from object storage
# Where a runtime without the streamer finds weights fetched from object storage into its node's cache (the
# pod's `weights` init container, accelbench.loadgen.weights_cache): a folder per URI, read-only there.
WEIGHTS_CACHE_MOUNT = "/var/lib/accelbench/weights"
HF_TOKEN_ENV = "HF_TOKEN"
# Arguments the planner owns on every tier: a user may not pass them as extra engine args. A flag only one
# tier's planner sets (the Neuron tier's --max-num-seqs) is refused by that tier (Tier.request_problems).
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
    "--gpu-memory-utilization",
    "--load-format",  # the streamer's, with ACCELBENCH_WEIGHTS_URI
)


@dataclass(frozen=True)
class Recipe:
    """How vLLM runs on one tier (accelbench.tiers: each tier names its recipe). Subclasses set the image
    and the tier-specific knobs."""

    runtime: ClassVar[str]
    # The settings field of the image repository (a mirror may replace it), declared by its tier's settings
    # group (accelbench.tiers); None: the recipe's `image` names its image itself and reads no setting.
    repository_field: ClassVar[str | None] = None
    default_version: ClassVar[str]
    # Whether the runtime streams weights from object storage (vLLM's Run:ai model streamer, in the CPU and
    # GPU images' vLLM): a server spec's `weights_uri` is served with `--load-format runai_streamer`; without
    # it, from the copy the pod's node keeps (`cached_weights`).
    streams_weights: ClassVar[bool] = True

    @property
    def repository_setting(self) -> str:
        return env_name(self._repository_field())

    @property
    def default_repository(self) -> str:
        return str(setting_default(self._repository_field()))

    def repository(self) -> str:
        return self.configured(Settings.from_env(self._repository_field()))

    def configured(self, settings: Settings) -> str:
        """The image repository `settings` give (a mirror may replace the default)."""
        return str(settings.value(self._repository_field()))

    def _repository_field(self) -> str:
        if self.repository_field is None:
            raise ConfigError(
                "runtime", self.runtime, "no image repository setting: its recipe names its image"
            )
        return self.repository_field

    def tag(self, version: str) -> str:
        return f"v{version.removeprefix('v')}"

    def release_source(self, settings: Settings) -> ReleaseSource:
        """The client that lists this runtime's releases from its image repository (a mirror when set)."""
        raise ConfigError("runtime", self.runtime, "no release source: its versions are not discovered")

    @property
    def has_release_source(self) -> bool:
        """Whether release discovery lists this runtime's releases (its recipe gives a `release_source`)."""
        return type(self).release_source is not Recipe.release_source

    def image(self, version: str, recorded: str | None = None) -> str:
        """The image a server of `version` runs. CPU and GPU tags are the version's own spelling, so the
        image is computed (in the configured repository, which may be a mirror) and `recorded`, the
        catalog's image of that version (queries.runtime_image), is not needed."""
        return f"{self.repository()}:{self.tag(version)}"

    def container_command(self) -> list[str]:
        """The server container's command, whatever the image's ENTRYPOINT: the GPU image's has been
        `python3 -m vllm.entrypoints.openai.api_server`, which ignores a leading model argument
        (vllm-project/vllm#32294), and the Neuron DLC's runs its arguments as a command."""
        return ["vllm", "serve"]

    def support_problem(self, instance_family: str, version: str) -> str | None:
        """Why an instance family cannot run this runtime at `version`; None when nothing known forbids it."""
        return None

    def tier_args(self, spec: ServerSpec) -> list[str]:
        return []

    def tier_env(self, spec: ServerSpec) -> dict[str, str]:
        return {}

    def args(self, spec: ServerSpec, host: str = "0.0.0.0", port: int = SERVER_PORT) -> list[str]:
        """`vllm serve` arguments; the image's ENTRYPOINT is `vllm serve`, so the model comes first: its
        weights' URI where they are streamed (the model's files there, the tokenizer's too), their copy in
        the node's cache where the runtime cannot stream them, else its id or folder."""
        streamed = ["--load-format", STREAMER] if self.streams(spec) else []
        model = spec.model
        if spec.weights_uri:
            model = cached_weights(spec.weights_uri) if self.node_cached(spec) else spec.weights_uri
        args = [
            model,
            *streamed,
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
        return [*args, *spec.tier_fields.engine_args(), *self.tier_args(spec), *spec.extra_engine_args]

    def streams(self, spec: ServerSpec) -> bool:
        """Whether this server streams its weights from object storage (else: the Hub, its folder, or the
        node's cache)."""
        return bool(spec.weights_uri) and self.streams_weights

    def node_cached(self, spec: ServerSpec) -> bool:
        """Whether this server serves its node's copy of its weights (fetched before it starts)."""
        return bool(spec.weights_uri) and not self.streams_weights

    def env(self, spec: ServerSpec) -> dict[str, str]:
        """Plain environment; the HF token is never here (it comes from a Secret). Streamed weights from an
        S3-compatible store (the lake's endpoint setting, as the load generator gets it): its endpoint, and
        path-style addressing (the Run:ai streamer's default is virtual-host, which such stores lack)."""
        streamer = {}
        endpoint = next((os.environ[k] for k in S3_ENDPOINT_SETTINGS if os.environ.get(k)), None)
        if self.streams(spec) and endpoint:
            streamer = {"AWS_ENDPOINT_URL": endpoint, "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING": "0"}
        return {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", **streamer, **self.tier_env(spec)}


def cached_weights(uri: str) -> str:
    """The folder of `uri`'s copy in the node's weight cache, as the server sees it: one folder per bucket and
    key, so two URIs never share a copy."""
    bucket_and_key = uri.removeprefix("s3://").strip("/")
    if not bucket_and_key or ".." in bucket_and_key.split("/"):
        raise ConfigError("weights_uri", uri, "not s3://bucket/key")
    return f"{WEIGHTS_CACHE_MOUNT}/{bucket_and_key}"


@dataclass(frozen=True)
class VllmCpu(Recipe):
    runtime: ClassVar[str] = "vllm-cpu"
    repository_field: ClassVar[str] = "vllm_cpu_image_repository"
    # Used only when the catalog's runtime_versions has no vllm-cpu row (FACTS.md: v0.18.0+ seen).
    default_version: ClassVar[str] = "0.18.0"
    omp_threads_bind: str = "auto"

    def tag(self, version: str) -> str:
        return f"{super().tag(version)}{VLLM_CPU_TAGS.suffix}"  # the arm64-only tag; never the multi-arch one

    def release_source(self, settings: Settings) -> ReleaseSource:
        from accelbench.runtime.dockerhub import DockerHubClient

        return DockerHubClient(self.configured(settings), settings.releases.registry_url, VLLM_CPU_TAGS)

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
    runtime: ClassVar[str] = "vllm-gpu"
    repository_field: ClassVar[str] = "vllm_gpu_image_repository"
    # Used only when the catalog has no vllm-gpu row; vllm/vllm-openai:v0.18.0 is a published tag.
    default_version: ClassVar[str] = "0.18.0"

    def release_source(self, settings: Settings) -> ReleaseSource:
        from accelbench.runtime.dockerhub import DockerHubClient

        return DockerHubClient(self.configured(settings), settings.releases.registry_url, VLLM_GPU_TAGS)

    # No tier_args: the GPU memory share is the GPU tier's server field (it renders its flag), the batch is
    # vLLM's own scheduling (no --max-num-seqs to compile for), TP is the GPU count, and the fp8 KV cache
    # comes through --kv-cache-dtype.


def _tag_of(reference: str) -> str:
    """The tag of `repository:tag` (a registry port or a trailing @digest notwithstanding)."""
    name, sep, tag = reference.split("@", 1)[0].rpartition(":")
    if not sep or not name or "/" in tag:
        raise ConfigError("image", reference, "an image reference without a tag")
    return tag


@dataclass(frozen=True)
class VllmNeuron(Recipe):
    """AWS's Neuron vLLM DLC. Its tag names the Neuron SDK, Python and OS besides the vLLM version, so the
    image comes from what release discovery recorded; the arguments and environment of each DLC line are
    in runtime/neuron.py."""

    runtime: ClassVar[str] = "vllm-neuron"
    repository_field: ClassVar[str] = "vllm_neuron_image_repository"
    # The DLC is not known to carry the Run:ai streamer: with ACCELBENCH_WEIGHTS_URI, the node's copy.
    streams_weights: ClassVar[bool] = False
    # The newest line Inf2 and Trn1 run (neuron.NEURON_CORE_V2_LAST_LINE), built for Neuron SDK 2.31.1: a
    # published tag, used only when the catalog has no vllm-neuron row, so that a campaign runs before the
    # first release discovery. Any other version needs its recorded tag (the SDK cannot be derived).
    default_image_tag: ClassVar[str] = "0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"
    default_version: ClassVar[str] = NEURON_DLC_TAGS.parse(default_image_tag).version

    def tag(self, version: str) -> str:
        if version.removeprefix("v") == self.default_version:
            return self.default_image_tag
        raise ConfigError(
            "neuron_version",
            version,
            "the Neuron DLC's tag names the Neuron SDK, Python and OS besides the vLLM version (e.g. "
            f"{self.default_image_tag}), so it cannot be derived from the version: run release discovery "
            "(accelbench_vllm_cpu_releases records vllm-neuron versions in the catalog) or give the image",
        )

    def image(self, version: str, recorded: str | None = None) -> str:
        """The recorded tag in the configured repository (a mirror keeps the tag); without one, only the
        default version's tag is known."""
        if recorded:
            return f"{self.repository()}:{_tag_of(recorded)}"
        return super().image(version)

    def support_problem(self, instance_family: str, version: str) -> str | None:
        return neuron_support_problem(instance_family, version)

    def release_source(self, settings: Settings) -> ReleaseSource:
        from accelbench.runtime.oci import OciClient

        return OciClient(
            self.configured(settings), NEURON_DLC_TAGS, settings.value("neuron_registry_url") or None
        )

    def tier_args(self, spec: ServerSpec) -> list[str]:
        """The DLC line's flags, after the compiled batch (the Neuron tier's server field renders it)."""
        return neuron_args(spec.version)

    def tier_env(self, spec: ServerSpec) -> dict[str, str]:
        return neuron_env(spec.version)
