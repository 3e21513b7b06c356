"""How the tests' vLLM servers are started: vLLM's default (a worker process of its own) against the worker in
the engine process (VLLM_ENABLE_V1_MULTIPROCESSING=0), with and without one OpenMP thread (OMP_NUM_THREADS=1,
what tests/conftest.py sets), and the tests' servers since stop 56: the same, offline, their API server
borrowed from a fork server where vLLM is already imported (`bench_runner.py --fork-server`, started here
once with the same environment, not timed; since stop 57 the borrowed server forks its engine core from
itself instead of spawning it): seconds to healthy, and the latency of sequential requests once
up.

Run: PYTHONPATH=plugins .venv/bin/python benchmarks/server_start_in_tests.py [--starts 2] [--requests 20]

Each start is the suite's own LocalServer on the tiny model (built once into a temporary folder), pinned as
the tests pin the session's server (engine on CPU 1, API server on CPU 0, where there are two), then
`--requests` completions of 16 tokens one after another. Quiet machine assumed: run nothing beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
SETTINGS = {
    "vLLM's default (worker process)": {},
    "worker in the engine process": {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
    "worker in the engine process, 1 OpenMP thread": {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": "1",
    },
}
# The tests' (tests/conftest.py): the above, offline, and the API server borrowed (its socket added in main).
TESTS = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
BORROWED = "the same, offline, its API server borrowed from a fork server (the tests')"


def measure(model: Path, env: dict[str, str], requests: int) -> tuple[float, float, float]:
    """(seconds to healthy, median and max request seconds) of one server started with `env` added."""
    from accelbench.local.server import LocalServer, Pinning

    from tests.support.specs import tiny_spec

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        pinning = Pinning({1}, {0}) if (psutil.cpu_count() or 1) >= 2 else None
        work = Path(tempfile.mkdtemp(prefix="server-start-"))
        started = time.monotonic()
        with LocalServer(tiny_spec(model), work, python=VLLM_PYTHON, pinning=pinning) as server:
            up = time.monotonic() - started
            seconds = []
            for _ in range(requests):
                t0 = time.monotonic()
                body = {
                    "model": server.spec.served_model_name,
                    "prompt": "graviton vllm token " * 8,
                    "max_tokens": 16,
                    "ignore_eos": True,
                }
                httpx.post(f"{server.url}/v1/completions", json=body, timeout=120).raise_for_status()
                seconds.append(time.monotonic() - t0)
        return up, statistics.median(seconds), max(seconds)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=2)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    model = Path(tempfile.mkdtemp(prefix="tiny-model-")) / "model"
    env = os.environ | {"PYTHONPATH": str(REPO / "plugins")}
    subprocess.run([str(VLLM_PYTHON), "-m", "accelbench.local.tiny_model", str(model)], check=True, env=env)
    socket = Path(tempfile.mkdtemp(prefix="fork-server-")) / "bench-runners.sock"
    runner = REPO / "plugins" / "accelbench" / "loadgen" / "bench_runner.py"
    fork = subprocess.Popen(
        [str(VLLM_PYTHON), "-P", str(runner), "--fork-server", str(socket)],
        env=os.environ | TESTS,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert fork.stdout is not None and '"ready"' in fork.stdout.readline()  # vLLM imported, listening
    settings = SETTINGS | {BORROWED: TESTS | {"ACCELBENCH_BENCH_FORK_SERVER": str(socket)}}
    print(f"| setting | start to healthy, s (each of {args.starts}) | request median, ms | request max, ms |")
    print("|---|---|---|---|")
    try:
        for name, added in settings.items():
            runs = [measure(model, added, args.requests) for _ in range(args.starts)]
            ups = ", ".join(f"{up:.1f}" for up, _, _ in runs)
            median = statistics.median(m for _, m, _ in runs) * 1000
            worst = max(w for _, _, w in runs) * 1000
            print(f"| {name} | {ups} | {median:.0f} | {worst:.0f} |", flush=True)
    finally:
        fork.kill()


if __name__ == "__main__":
    main()
