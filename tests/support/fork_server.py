"""The run's fork server of bench runners (accelbench/loadgen/bench_runner.py): started with the vLLM
environment, it imports vLLM once, and every runner a test starts in that environment (a campaign's, an
Airflow task's, a load-generator process's) borrows a child forked from it instead of importing vLLM itself
(~9 CPU-s each; a CI run starts ~20). One serves every lane: the run's first process (xdist's controller, or
pytest alone) names its socket for all of them and starts it once a lane asks (`want`), so it lives as long
as the run, not as long as the lane that asked first (one per lane cost ~13 CPU-s each).
The tests' local vLLM servers borrow from it too (`accelbench.local.server`: the API server's import, ~6 s of
a tiny server's ~15 s start here, quiet; a run starts ~35): tests/conftest.py gives every process the
offline switches a server sets, so that their environments agree on what vLLM's import reads.
tests/e2e/test_bench_client.py tests the runner without it, and the fork server itself;
tests/e2e/test_faults.py's worker death starts a server of its own (the product's process group)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from accelbench.config import env_name
from accelbench.lifetime import die_with_parent
from accelbench.loadgen.bench_client import RUNNER

FORK_SERVER = env_name("bench_fork_server")
WANTED = "wanted"  # beside the socket: a lane has asked for the fork server


def start(python: Path, folder: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A fork server of `python`'s environment and the socket it listens on once vLLM is imported (not
    waited for: until then, a runner imports vLLM itself)."""
    path = folder / "bench-runners.sock"
    proc = subprocess.Popen(
        [str(python), "-P", str(RUNNER), "--fork-server", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        preexec_fn=lambda: die_with_parent(signal.SIGTERM),
    )
    return proc, path


def inherited() -> dict[str, str]:
    """The fork server's variable, for an environment built without this process's ACCELBENCH_* ones."""
    return {FORK_SERVER: os.environ[FORK_SERVER]} if FORK_SERVER in os.environ else {}


def serve_the_run(python: Path) -> Callable[[], None]:
    """In the run's first process: a socket named for every lane (the variable, which they inherit), and a
    fork server of `python`'s environment started there once a lane asks for it (`want`). Returns its stop."""
    folder = Path(tempfile.mkdtemp(prefix="accelbench-bench-runners-"))
    os.environ[FORK_SERVER] = str(folder / "bench-runners.sock")
    stopping = threading.Event()
    started: list[subprocess.Popen[bytes]] = []

    def serve() -> None:
        while not (folder / WANTED).exists():
            if stopping.wait(0.2):
                return
        proc, _ = start(python, folder)
        started.append(proc)
        proc.wait()  # this thread lives as long as the server: PDEATHSIG follows the thread that started it

    thread = threading.Thread(target=serve, name="bench-fork-server", daemon=True)
    thread.start()

    def stop() -> None:
        stopping.set()
        for proc in started:
            proc.kill()
        thread.join(10)
        os.environ.pop(FORK_SERVER, None)
        shutil.rmtree(folder, ignore_errors=True)

    return stop


def want() -> None:
    """Ask for the run's fork server (started once; until it listens, a runner imports vLLM itself)."""
    if FORK_SERVER in os.environ:
        Path(os.environ[FORK_SERVER]).with_name(WANTED).touch()
