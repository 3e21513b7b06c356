"""Where a runtime's releases come from: a client of its image registry that lists them by its tag rule.

Each server recipe says which (Recipe.release_source, accelbench.runtime.recipes): vllm-cpu and vllm-gpu,
Docker Hub's tag API (`ACCELBENCH_REGISTRY_URL`), tags `v<version>-arm64` and `v<version>`; vllm-neuron, the
OCI distribution API of the DLC's registry (ECR Public, or `ACCELBENCH_NEURON_REGISTRY_URL`), one DLC tag per
vLLM version (the newest Neuron SDK build).
"""

from __future__ import annotations

from typing import Protocol

from accelbench.runtime.registry import TagListing


class ReleaseSource(Protocol):
    @property
    def where(self) -> str:
        """The repository and registry, for the logs."""
        ...

    def releases(self, include_prereleases: bool = False) -> TagListing: ...
