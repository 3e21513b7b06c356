"""The lane's fork server of bench runners (accelbench/loadgen/bench_runner.py): started with the vLLM
environment, it imports vLLM once, and every runner a test starts in that environment (a campaign's, an
Airflow task's, a load-generator process's) borrows a child forked from it instead of importing vLLM itself
(~9 CPU-s each; a CI run starts ~20). tests/e2e/test_bench_client.py tests the runner without it, and the
fork server itself."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from accelbench.config import env_name
from accelbench.lifetime import die_with_parent
from accelbench.loadgen.bench_client import RUNNER

FORK_SERVER = env_name("bench_fork_server")


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
