"""Background samplers during a level: the server's resident memory and its queue/KV gauges."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

import psutil


def rss_anon_bytes(pid: int) -> int:
    """RssAnon from /proc/<pid>/status (anonymous memory: weights copies, KV cache, heaps)."""
    with contextlib.suppress(OSError), Path(f"/proc/{pid}/status").open() as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def find_server_pid() -> int | None:
    """In a pod (shared process namespace): the `vllm serve` process whose parent is not one."""
    candidates = {}
    for proc in psutil.process_iter(["pid", "ppid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if "vllm" in cmd and " serve" in cmd:
            candidates[proc.info["pid"]] = proc.info["ppid"]
    roots = [pid for pid, ppid in candidates.items() if ppid not in candidates]
    return min(roots) if roots else None


class Sampler:
    """Calls `probe` every `interval_s` in a thread and keeps the maximum of each value."""

    def __init__(self, probe: Callable[[], dict[str, float]], interval_s: float) -> None:
        self.probe, self.interval_s = probe, interval_s
        self.peaks: dict[str, float] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a missed sample must not end the level
                for key, value in self.probe().items():
                    self.peaks[key] = max(value, self.peaks.get(key, value))
                self.samples += 1
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def memory_probe(pid: int) -> Callable[[], dict[str, float]]:
    def probe() -> dict[str, float]:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
        rss = anon = 0
        for proc in tree:
            with contextlib.suppress(psutil.Error):
                rss += proc.memory_info().rss
                anon += rss_anon_bytes(proc.pid)
        return {"server_rss_bytes": float(rss), "server_rss_anon_bytes": float(anon)}

    return probe
