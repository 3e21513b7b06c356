"""A server's start-up in phases: what a user pays before the first request, and the cold-start latency a
scale-from-zero deployment waits. Each mode writes one `startup.json` beside the envelope (the lake's raw
area); the ingest makes it the `startups` row (accelbench.lake.startups).

Phases follow each other: each ends where the next begins, so their sum is the start-up from the first
instant to ready. A boundary that was not seen (an older vLLM that logs otherwise) leaves its phase null and
the time in the next phase, so the sum still holds.

- Local mode (accelbench.local.server): boundaries are vLLM's own log lines, stamped on this host's
  monotonic clock when the server's log showed them (read at every health poll, `POLL_S`): process launched
  -> engine core started -> weights loaded -> engine initialised (memory profile, KV cache, warm-up,
  torch.compile) -> /health answered. vLLM's own durations of the same steps are kept beside them.
- Kubernetes mode (accelbench.k8s.pod_startup): the API's timestamps (to the second): pod created -> scheduled
  (a node found, or launched for it) -> the server container started (its image pulled) -> the load
  generator started (the server's startup probe passed). The node's launch and the kubelet's pull time are
  kept beside them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict

STARTUP_FILE = "startup.json"
FORMAT = 1
POLL_S = 0.25  # how often local mode reads the log and asks /health during start-up

# Every phase the lake has a column for, in order, with what it spans.
PHASES: dict[str, str] = {
    "process_start_s": "local: process launched -> vLLM's engine core starts (imports, configuration)",
    "model_load_s": "local: engine core started -> weights loaded",
    "engine_init_s": "local: weights loaded -> engine ready (memory profile, KV cache, warm-up, compile)",
    "api_start_s": "local: engine initialised -> /health answered",
    "scheduling_s": "kubernetes: pod created -> scheduled (a node found, or launched for it)",
    "image_pull_s": "kubernetes: scheduled -> the server container started (its image pulled)",
    "server_start_s": "kubernetes: the server container started -> its startup probe passed",
}
# Durations inside the phases, not added to them: vLLM's own, from its log, and the cluster's.
FIGURES: dict[str, str] = {
    "vllm_weights_load_s": "vLLM's 'Loading weights took'",
    "vllm_engine_init_s": "vLLM's 'init engine (profile, create kv cache, warmup model) took'",
    "vllm_compile_s": "the compilation seconds of vLLM's 'init engine' line (absent in eager mode)",
    "node_launch_s": "kubernetes: pod created -> its node created, when the node is younger than the pod",
    "kubelet_pull_s": "kubernetes: the kubelet's pull time of the server image (0: it was on the node)",
    "weights_fetch_s": "kubernetes: the weights' copy into the node's cache before the server started (a "
    "runtime without the streamer; about 0 when the node had them)",
}
VLLM_PATTERNS: dict[str, str] = {
    "vllm_weights_load_s": r"Loading weights took ([0-9.]+) seconds",
    "vllm_engine_init_s": r"init engine \(profile, create kv cache, warmup model\) took ([0-9.]+) s",
    "vllm_compile_s": r"init engine \(profile, create kv cache, warmup model\) took [0-9.]+ s \(compilation: "
    r"([0-9.]+) s",
}
# Local mode: the log line that ends each phase but the last (which /health ends).
LOCAL_BOUNDARIES: tuple[tuple[str, str], ...] = (
    ("process_start_s", "Initializing a V1 LLM engine"),
    ("model_load_s", "Loading weights took"),
    ("engine_init_s", "init engine (profile, create kv cache, warmup model) took"),
)
LOCAL_LAST = "api_start_s"
LOCAL_METHOD = (
    f"local: phase boundaries are vLLM's log lines, stamped when this host read them (every {POLL_S:g} s)"
)
KUBERNETES_BOUNDARIES = ("scheduling_s", "image_pull_s", "server_start_s")
KUBERNETES_METHOD = (
    "kubernetes: the pod's creation, PodScheduled condition and containers' start times, as the API keeps "
    "them (to the second)"
)


class Startup(BaseModel):
    """`startup.json`: one server's start-up (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid")

    format: int = FORMAT
    execution_mode: str
    started_at: str  # the first instant, UTC ISO 8601 (local: the process launched)
    ready_s: float  # the first instant -> ready, as measured
    phases: dict[str, float | None]  # PHASES' names, in order; their sum is ready_s
    figures: dict[str, float | None] = {}  # FIGURES' names: durations inside the phases
    nodeclaim: str | None = None  # kubernetes: the Karpenter NodeClaim that owns the node
    method: str
    # When the server stopped (local: the process; kubernetes: the pod deleted), UTC ISO 8601: the end of
    # what it was paid for (`billed_from`)
    ended_at: str | None = None

    def billed_from(self) -> datetime:
        """Where paying for the server began: the node's launch for it (kubernetes, a node launched for the
        pod), else the pod's scheduling on a node that was there (kubernetes), else the process's launch."""
        start = datetime.fromisoformat(self.started_at)
        if self.execution_mode != "kubernetes":
            return start
        launched, scheduled = self.figures.get("node_launch_s"), self.phases.get("scheduling_s")
        offset = launched if launched is not None else scheduled
        return start + timedelta(seconds=offset or 0.0)

    def billed_s(self) -> float | None:
        """Seconds the server's node was paid for (None: its end was not recorded)."""
        if self.ended_at is None:
            return None
        return round((datetime.fromisoformat(self.ended_at) - self.billed_from()).total_seconds(), 3)


@dataclass
class LogStamps:
    """The first time each boundary's line appeared in a growing log, read from where the last read ended."""

    path: Path
    boundaries: tuple[tuple[str, str], ...] = LOCAL_BOUNDARIES
    seen: dict[str, float] = field(default_factory=dict)
    text: str = ""  # what has been read: vLLM's figures are parsed from it at the end
    _offset: int = 0

    def read(self, now: float) -> None:
        try:
            with self.path.open("rb") as log:
                log.seek(self._offset)
                chunk = log.read()
        except OSError:
            return
        # Up to the last newline: a line half-written now is read whole next time.
        end = chunk.rfind(b"\n") + 1
        self._offset += end
        self.text += chunk[:end].decode(errors="replace")
        for name, marker in self.boundaries:
            if name not in self.seen and marker in self.text:
                self.seen[name] = now


def vllm_figures(log_text: str) -> dict[str, float | None]:
    """vLLM's own durations of its start-up steps, from its log (None where it did not print one)."""
    out: dict[str, float | None] = {}
    for name, pattern in VLLM_PATTERNS.items():
        found = re.search(pattern, log_text)
        out[name] = float(found.group(1)) if found else None
    return out


def local_startup(stamps: LogStamps, launched: float, healthy: float, started_at: str) -> Startup:
    """The phases between `launched` and `healthy` (monotonic seconds) from the stamped boundaries; a boundary
    not seen, or seen out of order, leaves its phase null and its time in the next."""
    phases: dict[str, float | None] = {}
    last = launched
    for name, _ in stamps.boundaries:
        at = stamps.seen.get(name)
        if at is None or at < last:
            phases[name] = None
            continue
        phases[name] = round(at - last, 3)
        last = at
    phases[LOCAL_LAST] = round(healthy - last, 3)
    return Startup(
        execution_mode="local",
        started_at=started_at,
        ready_s=round(healthy - launched, 3),
        phases=phases,
        figures=vllm_figures(stamps.text),
        method=LOCAL_METHOD,
    )
