"""Child processes that do not outlive the process that started them (Linux PR_SET_PDEATHSIG).

A worker that dies mid-benchmark (OOM kill, node drain, SIGKILL) must not leave a vLLM server or a
`vllm bench serve` client running: they would hold the port, the CPUs and the memory of the retry.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """For subprocess's preexec_fn: the kernel sends `sig` to the child when its parent exits."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
