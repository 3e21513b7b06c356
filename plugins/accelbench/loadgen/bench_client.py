"""The driver's end of bench_runner: one warm `vllm bench serve` process that runs every level of a server.

A level used to start `vllm bench serve` afresh and pay vLLM's import (about 9 s on one core) each time.
The runner imports it once; a run that crashes or hangs the runner fails only its level, and the next
level starts a new runner. The runner is a child of the driver: it dies with it (PDEATHSIG) and runs
pinned where the driver says.

`pooled` lends a process's runner to its next benchmark too: local mode runs a campaign's benchmarks one
after another in one process under `airflow dags test` (and the tests' `dag.test()`), each of which started
a runner of its own and paid the import again.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from accelbench.config import env_name
from accelbench.errors import AccelbenchError
from accelbench.lifetime import die_with_parent

log = logging.getLogger(__name__)
RUNNER = Path(__file__).with_name("bench_runner.py")
VLLM_BIN_SETTING = env_name("vllm_bin")


class BenchProcessError(AccelbenchError):
    """The bench runner could not start, or stopped without answering."""


def vllm_interpreter(vllm: str) -> str:
    """The Python of the environment the `vllm` executable belongs to (its bin/ holds both)."""
    exe = shutil.which(vllm)
    if exe is None:
        raise BenchProcessError(f"{VLLM_BIN_SETTING}: {vllm!r} is not an executable on PATH")
    for name in ("python", "python3"):
        candidate = Path(exe).parent / name  # not resolved: a venv's python is a symlink to its base
        if os.access(candidate, os.X_OK):
            return str(candidate)
    raise BenchProcessError(
        f"{VLLM_BIN_SETTING}: no python beside {exe}; install vLLM into a virtual environment"
    )


def child_setup(cpus: set[int] | None) -> Callable[[], None]:
    """What runs in the child before exec: die with the driver; pinned to `cpus` if given."""

    def setup() -> None:
        die_with_parent(signal.SIGTERM)
        if cpus:
            os.sched_setaffinity(0, cpus)

    return setup


class BenchClient:
    """Runs `vllm bench serve <args>` in the warm runner; start() early to hide the import (e.g. while
    the server starts), or let the first run() start it."""

    def __init__(self, vllm: str, cpus: set[int] | None = None, start_timeout_s: float = 300.0) -> None:
        self.vllm, self.cpus, self.start_timeout_s = vllm, cpus, start_timeout_s
        self.proc: subprocess.Popen[str] | None = None
        self.version: str | None = None
        self.starts = 0
        self.in_flight = False  # a job sent and not answered: the runner's next line is that job's

    def start(self) -> BenchClient:
        """Launch the runner (does not wait for its import)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [vllm_interpreter(self.vllm), "-P", str(RUNNER)],  # -P: the script's folder not on sys.path
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                preexec_fn=child_setup(self.cpus),
            )
            self.version, self.starts = None, self.starts + 1
        return self

    def _reply(self, timeout_s: float, what: str) -> dict[str, Any] | None:
        """The runner's next line, or None if it exited; kills it and raises TimeoutExpired on timeout."""
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        if not ready:
            self._kill()
            raise subprocess.TimeoutExpired(what, timeout_s)
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def _ready(self) -> None:
        self.start()
        if self.version is not None:
            return
        started = time.monotonic()
        reply = self._reply(self.start_timeout_s, "vllm bench runner start")
        if reply is None or "ready" not in reply:
            code = self._kill()
            raise BenchProcessError(f"the vllm bench runner exited with {code} before it was ready")
        self.version = str(reply["ready"])
        log.info("vllm bench runner ready (vLLM %s), waited %.1f s", self.version, time.monotonic() - started)

    def run(self, args: list[str], log_path: Path, timeout_s: float) -> int:
        """`vllm bench serve`'s exit code for `args`, its output in `log_path`. A runner that dies during
        the run gives its own exit status (negative: a signal); one that outlasts timeout_s is killed."""
        deadline = time.monotonic() + timeout_s
        self._ready()
        assert self.proc is not None and self.proc.stdin is not None
        self.in_flight = True
        self._send(self.proc.stdin, {"args": args, "log": str(log_path)})
        reply = self._reply(max(0.0, deadline - time.monotonic()), "vllm bench serve")
        self.in_flight = False
        if reply is None:
            return self._kill()
        return int(reply["exit"])

    def _send(self, stdin: IO[str], job: dict[str, Any]) -> None:
        try:
            stdin.write(json.dumps(job) + "\n")
            stdin.flush()
        except BrokenPipeError:
            code = self._kill()
            raise BenchProcessError(f"the vllm bench runner had exited with {code}") from None

    def _kill(self) -> int:
        """Stop the runner now; its exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        self._close_pipes()
        self.in_flight = False
        return code

    def _close_pipes(self) -> None:
        assert self.proc is not None
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(BrokenPipeError):
                    pipe.close()

    def close(self) -> None:
        """End of input: the runner exits on its own; killed if it does not within 10 s."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._close_pipes()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self._kill()
        self._close_pipes()
        self.proc = None

    def __enter__(self) -> BenchClient:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# The runners a process has idle, by (vllm, cpus): `pooled` takes one or starts one, and gives it back.
_IDLE: dict[tuple[str, frozenset[int] | None], list[BenchClient]] = {}
_IDLE_LOCK = threading.Lock()


def _close_idle() -> None:
    with _IDLE_LOCK:
        clients = [c for idle in _IDLE.values() for c in idle]
        _IDLE.clear()
    for client in clients:
        client.close()


atexit.register(_close_idle)  # and each runner dies with its process anyway (PDEATHSIG)
os.register_at_fork(after_in_child=_IDLE.clear)  # a forked child's runners are its parent's


@contextlib.contextmanager
def pooled(vllm: str, cpus: set[int] | None = None) -> Iterator[BenchClient]:
    """A started runner for one benchmark: one an earlier benchmark of this process gave back (vLLM already
    imported), else a new one. Given back afterwards, unless a job of it was cut short from outside (an
    exception while it ran: Airflow's execution timeout, an interrupt): that runner's next line would be the
    job's answer, so it is killed."""
    key = (vllm, frozenset(cpus) if cpus else None)
    with _IDLE_LOCK:
        idle = _IDLE.get(key, [])
        client = idle.pop() if idle else None
    if client is not None and client.proc is not None and client.proc.poll() is None:
        log.info("vllm bench runner: the warm one of an earlier benchmark of this process")
    else:
        if client is not None:  # it died while idle (killed, out of memory): its pipes closed, a new one
            client.close()
        client = BenchClient(vllm, cpus)
    client.start()
    try:
        yield client
    finally:
        if client.in_flight:
            client._kill()
            client.close()
        else:
            with _IDLE_LOCK:
                _IDLE.setdefault(key, []).append(client)
