"""Memory of a process tree over time: RSS, PSS, RssAnon and an estimate of its cgroup charge, by role.

A thread samples the tree of a root process every `interval_s` (psutil: `memory_full_info()` reads
/proc/<pid>/smaps_rollup, RssAnon comes from /proc/<pid>/status). Each sample sums every metric over the
processes of a role (`role(proc, root_pid)`) and over the whole tree, so a peak of the tree is the peak of
a sum at one instant, not the sum of the roles' peaks. `mark(name)` stamps a phase boundary; `peak()` and
`median()` read the samples between two marks.

`charge` estimates what a container holding just these processes is charged: their anonymous memory
(RssAnon) plus the resident pages of every file and shared-memory mapping, each path counted once
(the largest resident size any process of the group maps of it; /proc/<pid>/smaps, read every
`file_interval_s` because it is slow). A sum of RSS counts a library that three processes map three
times; PSS divides it among every process on the host that maps it, including ones outside the tree.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil
from accelbench.loadgen.sampling import rss_anon_bytes

METRICS = ("rss", "pss", "anon", "charge")
TOTAL = "total"
MIB = 1024**2


@dataclass
class Sample:
    t: float
    sums: dict[str, dict[str, int]]  # role (and "total") -> metric -> bytes
    processes: int


def file_pages(pid: int) -> dict[str, int]:
    """Resident bytes per mapped file or shared-memory path (its private anonymous copies left out)."""
    out: dict[str, int] = {}
    key = None
    with open(f"/proc/{pid}/smaps") as fh:
        for line in fh:
            if line[0].isupper():  # a field of the current mapping
                if key is not None and line.startswith(("Rss:", "Anonymous:")):
                    kib = int(line.split()[1])
                    out[key] = out.get(key, 0) + (kib if line[0] == "R" else -kib) * 1024
            else:  # a mapping: address range, perms, offset, device, inode, path
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) > 5 else ""
                key = path if path and not path.startswith("[") else None
    return out


def union(maps: list[dict[str, int]]) -> int:
    merged: dict[str, int] = {}
    for pages in maps:
        for path, size in pages.items():
            merged[path] = max(size, merged.get(path, 0))
    return sum(merged.values())


def by_root(proc: psutil.Process, root_pid: int) -> str:
    return "root" if proc.pid == root_pid else "children"


@dataclass
class TreeSampler:
    """`with TreeSampler(lambda: pid) as s:` ... `s.peak("pss")`. The root may appear later (None until)."""

    root: Callable[[], int | None]
    interval_s: float = 0.05
    file_interval_s: float = 1.0
    role: Callable[[psutil.Process, int], str] = by_root
    samples: list[Sample] = field(default_factory=list)
    marks: dict[str, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _files: dict[int, dict[str, int]] = field(default_factory=dict)  # pid -> its file pages, last read
    _files_at: float = float("-inf")

    def mark(self, name: str) -> None:
        self.marks[name] = time.monotonic()

    def _tree(self, pid: int) -> list[psutil.Process]:
        try:
            root = psutil.Process(pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def sample_once(self) -> Sample | None:
        pid = self.root()
        if pid is None:
            return None
        tree = self._tree(pid)
        if not tree:
            return None
        now = time.monotonic()
        read_files = now - self._files_at >= self.file_interval_s
        if read_files:
            self._files_at = now
        sums: dict[str, dict[str, int]] = {TOTAL: dict.fromkeys(METRICS, 0)}
        files: dict[str, list[dict[str, int]]] = {TOTAL: []}
        for proc in tree:
            try:
                full = proc.memory_full_info()
                values = {"rss": full.rss, "pss": full.pss, "anon": rss_anon_bytes(proc.pid)}
                name = self.role(proc, pid)
                if read_files or proc.pid not in self._files:
                    self._files[proc.pid] = file_pages(proc.pid)
            except (psutil.Error, OSError):  # it exited between the listing and the read
                continue
            role = sums.setdefault(name, dict.fromkeys(METRICS, 0))
            for key, value in values.items():
                role[key] += value
                sums[TOTAL][key] += value
            files.setdefault(name, []).append(self._files[proc.pid])
            files[TOTAL].append(self._files[proc.pid])
        for name, maps in files.items():
            sums[name]["charge"] = sums[name]["anon"] + union(maps)
        return Sample(time.monotonic(), sums, len(tree))

    def _run(self) -> None:
        while not self._stop.is_set():
            due = time.monotonic() + self.interval_s
            with contextlib.suppress(Exception):  # a missed sample must not end the measurement
                sample = self.sample_once()
                if sample is not None:
                    self.samples.append(sample)
            self._stop.wait(max(0.0, due - time.monotonic()))

    def __enter__(self) -> TreeSampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def window(self, start: str | None = None, end: str | None = None) -> list[Sample]:
        lo = self.marks[start] if start else float("-inf")
        hi = self.marks[end] if end else float("inf")
        return [s for s in self.samples if lo <= s.t <= hi]

    def roles(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.samples:
            seen.update(dict.fromkeys(s.sums))
        return [r for r in seen if r != TOTAL]

    def peak(self, metric: str, role: str = TOTAL, start: str | None = None, end: str | None = None) -> int:
        return max((s.sums.get(role, {}).get(metric, 0) for s in self.window(start, end)), default=0)

    def median(self, metric: str, role: str = TOTAL, start: str | None = None, end: str | None = None) -> int:
        values = [s.sums.get(role, {}).get(metric, 0) for s in self.window(start, end)]
        return int(statistics.median(values)) if values else 0

    def mean_interval_s(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        return (self.samples[-1].t - self.samples[0].t) / (len(self.samples) - 1)
