"""Where each runtime's releases come from: the registry protocol and the tag rule, one entry per runtime.

vllm-cpu and vllm-gpu: Docker Hub's tag API (`ACCELBENCH_REGISTRY_URL`), tags `v<version>-arm64` and
`v<version>`. vllm-neuron: the OCI distribution API of the DLC's registry (ECR Public, or
`ACCELBENCH_NEURON_REGISTRY_URL`), one DLC tag per vLLM version (the newest Neuron SDK build).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from accelbench.config import Settings
from accelbench.errors import ConfigError
from accelbench.runtime.dockerhub import DockerHubClient
from accelbench.runtime.oci import OciClient
from accelbench.runtime.recipes import recipe_for
from accelbench.runtime.registry import TagListing
from accelbench.runtime.tag_rules import NEURON_DLC_TAGS, VLLM_CPU_TAGS, VLLM_GPU_TAGS


class ReleaseSource(Protocol):
    @property
    def where(self) -> str:
        """The repository and registry, for the logs."""
        ...

    def releases(self, include_prereleases: bool = False) -> TagListing: ...


_SOURCES: dict[str, Callable[[str, Settings], ReleaseSource]] = {
    "vllm-cpu": lambda repository, s: DockerHubClient(repository, s.registry_url, VLLM_CPU_TAGS),
    "vllm-gpu": lambda repository, s: DockerHubClient(repository, s.registry_url, VLLM_GPU_TAGS),
    "vllm-neuron": lambda repo, s: OciClient(repo, NEURON_DLC_TAGS, s.neuron_registry_url or None),
}
RUNTIMES = tuple(_SOURCES)


def release_source(runtime: str, settings: Settings | None = None) -> ReleaseSource:
    """The client that lists `runtime`'s releases from its image repository (a mirror when configured)."""
    if runtime not in _SOURCES:
        raise ConfigError("runtime", runtime, f"no release source; expected one of {', '.join(_SOURCES)}")
    settings = settings or Settings.from_env()
    repository = str(getattr(settings, recipe_for(runtime).repository_field))
    return _SOURCES[runtime](repository, settings)
