"""Child processes that do not outlive the process that started them (Linux PR_SET_PDEATHSIG).

A worker that dies mid-benchmark (OOM kill, node drain, SIGKILL) must not leave a vLLM server or a
`vllm bench serve` client running: they would hold the port, the CPUs and the memory of the retry.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """For subprocess's preexec_fn: the kernel sends `sig` to the child when its parent exits."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


# The watchdog of a process group: killed with its parent by the kernel's SIGTERM, it SIGKILLs the group. A
# child that dies with its parent takes only itself: vLLM's API server does, and its engine core (a child of
# its own, vLLM's default multiprocessing) was left running, holding the CPUs and memory, when the worker
# died. Only processes of the group born with or after its leader are signalled (a group id can be reused).
_WATCHDOG = """
import os, signal, sys
import psutil
pgid, born, parent = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
def reap(*_):
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.create_time() >= born:
                proc.kill()
        except (psutil.Error, OSError):
            pass
    os._exit(0)
signal.signal(signal.SIGTERM, reap)
if os.getppid() != parent:
    reap()
while True:
    signal.pause()
"""


def watch_group(pgid: int, born: float) -> subprocess.Popen[bytes]:
    """A process that kills every process of group `pgid` (born at or after `born`) when this process dies,
    however it dies. Stop it with `.kill()` (no clean-up: the group's owner stops the group itself)."""
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(pgid), str(born), str(os.getpid())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: die_with_parent(signal.SIGTERM),
    )
