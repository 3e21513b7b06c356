"""Memory bandwidth per Graviton generation: CPU decode speed is bound by it, not by cores."""

from __future__ import annotations

from dataclasses import dataclass

# Theoretical peak per socket (FACTS.md section 1) and the vCPUs of one full socket.
PEAK_GBPS_PER_SOCKET = {"graviton3": 307.0, "graviton4": 538.0}
VCPUS_PER_SOCKET = {"graviton3": 64, "graviton4": 96}


@dataclass(frozen=True)
class BandwidthAdvisory:
    generation: str
    gbps: float | None
    weights_gb: float

    @property
    def single_stream_tokens_per_s(self) -> float | None:
        return self.gbps / self.weights_gb if self.gbps and self.weights_gb else None

    def __str__(self) -> str:
        if self.gbps is None:
            return (
                f"decode on CPU is memory-bandwidth bound; no published bandwidth figure for "
                f"{self.generation}: expect single-stream decode near bandwidth / "
                f"{self.weights_gb:.1f} GB of weights"
            )
        return (
            f"decode on CPU is memory-bandwidth bound: ~{self.gbps:.0f} GB/s theoretical peak for this "
            f"size, so one stream decodes at most ~{self.single_stream_tokens_per_s:.0f} tokens/s "
            f"({self.weights_gb:.1f} GB of weights read per token); batching raises total throughput, "
            "not this ceiling"
        )


def advisory(generation: str, vcpu: int, numa_nodes: int, weights_bytes: int) -> BandwidthAdvisory:
    """Smaller sizes get their share of a socket's bandwidth (a vCPU is a core on Graviton)."""
    peak = PEAK_GBPS_PER_SOCKET.get(generation)
    gbps = None
    if peak is not None:
        per_socket = VCPUS_PER_SOCKET[generation]
        gbps = peak * min(numa_nodes, vcpu / per_socket)
    return BandwidthAdvisory(generation, gbps, weights_bytes / 1e9)
