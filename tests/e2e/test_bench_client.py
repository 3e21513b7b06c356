"""The warm `vllm bench serve` runner: many levels in one process, the same results as a fresh process,
and a bad, crashed or hung level fails alone. Real vLLM (its bench code) against the zero-work server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from accelbench.core.levels import Level
from accelbench.loadgen import bench_client, bench_runner
from accelbench.loadgen.bench_client import BenchClient, BenchProcessError, pooled, vllm_interpreter
from accelbench.loadgen.bench_command import bench_args

from tests.support import fork_server
from tests.support.fork_server import FORK_SERVER
from tests.support.paths import REPO
from tests.support.specs import spec_for

sys.path.insert(0, str(REPO / "benchmarks"))
from zero_pipeline import zero_server


@pytest.fixture
def without_the_lanes_fork_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner a driver starts itself (a pod's), importing vLLM: the first test's. The others borrow theirs
    from the run's fork server (tests/support/fork_server.py), as every other test's driver does, so a
    crashed or killed runner is replaced by a borrowed one (the last test checks that a borrowed runner
    behaves as its own would); the images test drives the pod's environments, each runner importing."""
    monkeypatch.delenv(FORK_SERVER, raising=False)


def _args(tiny_model: Path, url: str, out: Path, name: str, seed: int = 5, prompts: int = 6) -> list[str]:
    return bench_args(
        spec_for(tiny_model),
        url,
        num_prompts=prompts,
        seed=seed,
        result_dir=out,
        result_file=f"{name}.json",
        level=Level("concurrency", 2),
        metadata={"accelbench_run_id": name},
    )


@pytest.mark.vllm
def test_levels_share_one_warm_process_and_match_a_fresh_one(
    tiny_model: Path, vllm_python: Path, tmp_path: Path, without_the_lanes_fork_server: None
) -> None:
    vllm = str(vllm_python.parent / "vllm")
    with zero_server(ttft_ms=2, itl_ms=1) as (url, _pid):
        with BenchClient(vllm) as client:
            codes = [
                client.run(_args(tiny_model, url, tmp_path, f"level{i}", seed=i), tmp_path / f"l{i}.log", 120)
                for i in range(3)
            ]
            assert client.proc is not None and client.proc.poll() is None
            runner_pid = client.proc.pid
        assert client.proc is None and codes == [0, 0, 0] and client.starts == 1
        with pytest.raises(ProcessLookupError):
            os.kill(runner_pid, 0)  # closed: the runner exited at the end of its input
        # The same level as a fresh `vllm bench serve` process: the same prompts (lengths), the same shape.
        (tmp_path / "fresh").mkdir()
        fresh = subprocess.run(
            [vllm, *_args(tiny_model, url, tmp_path / "fresh", "level1", seed=1)],
            capture_output=True,
            text=True,
            check=False,
        )
    assert fresh.returncode == 0, fresh.stdout[-2000:] + fresh.stderr[-2000:]
    warm = json.loads((tmp_path / "level1.json").read_text())
    cold = json.loads((tmp_path / "fresh" / "level1.json").read_text())
    assert warm["input_lens"] == cold["input_lens"] and warm["output_lens"] == cold["output_lens"]
    assert sorted(warm) == sorted(cold) and warm["completed"] == cold["completed"] == 6
    assert json.loads((tmp_path / "level2.json").read_text())["accelbench_run_id"] == "level2"
    # Each level's output went to its own log, none into the control channel or another level's log.
    logs = {i: (tmp_path / f"l{i}.log").read_text() for i in range(3)}
    assert all("Successful requests:" in text for text in logs.values())
    assert all(text.count("Serving Benchmark Result") == 1 for text in logs.values())


class Interrupted(Exception):
    """What Airflow's execution timeout does to a task: an exception raised in its thread, from a signal."""


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted


@pytest.mark.vllm
def test_a_bad_or_crashed_level_fails_alone_and_a_pooled_runner_serves_the_next_benchmark(
    tiny_model: Path, vllm_python: Path, tmp_path: Path
) -> None:
    vllm = str(vllm_python.parent / "vllm")
    with zero_server(ttft_ms=1500, itl_ms=1) as (url, _pid):
        with pooled(vllm) as client:  # the runner local mode's benchmarks take (accelbench.local.executor)
            # A flag vLLM does not know: argparse's exit code and message, and the runner lives on.
            wrong = [*_args(tiny_model, url, tmp_path, "bad"), "--no-such-flag"]
            bad = client.run(wrong, tmp_path / "bad.log", 120)
            assert bad == 2 and "--no-such-flag" in (tmp_path / "bad.log").read_text()
            assert client.starts == 1

            # The runner is killed during a level: that level gets the signal's status; the next one runs.
            assert client.proc is not None
            victim = client.proc.pid
            threading.Timer(1.0, os.kill, (victim, signal.SIGKILL)).start()
            assert client.run(_args(tiny_model, url, tmp_path, "killed"), tmp_path / "killed.log", 120) == -9
            assert client.run(_args(tiny_model, url, tmp_path, "after"), tmp_path / "after.log", 120) == 0
            assert client.starts == 2 and (tmp_path / "after.json").is_file() and client.proc is not None
            warm = client.proc.pid

        # Given back: the process's next benchmark takes the same runner, vLLM already imported.
        with pooled(vllm) as again:
            assert again is client and again.proc is not None and again.proc.pid == warm and again.starts == 2
            # A level cut short from outside: the runner is killed, not given back to answer the next job
            # with this one's line.
            previous = signal.signal(signal.SIGALRM, _interrupt)
            try:
                with pytest.raises(Interrupted), pooled(vllm) as taken:
                    assert taken is not client and taken.proc is not None  # in use: a runner of its own
                    fresh = taken.proc.pid
                    assert taken.run(wrong, tmp_path / "bad2.log", 120) == 2  # imported, and idle
                    signal.setitimer(signal.ITIMER_REAL, 1.0)  # during the next level (4.5 s)
                    taken.run(_args(tiny_model, url, tmp_path, "short"), tmp_path / "short.log", 300)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            assert taken.proc is None and taken not in bench_client._IDLE.get((vllm, None), [])
            with pytest.raises(ProcessLookupError):
                os.kill(fresh, 0)

            # A level that outlasts its timeout: TimeoutExpired, and the runner is gone, not left running.
            hung = again.proc.pid
            started = time.monotonic()
            with pytest.raises(subprocess.TimeoutExpired):
                again.run(_args(tiny_model, url, tmp_path, "slow", prompts=2), tmp_path / "slow.log", 0.5)
            assert time.monotonic() - started < 30
            with pytest.raises(ProcessLookupError):
                os.kill(hung, 0)


@pytest.mark.vllm
def test_a_loopback_server_is_never_reached_through_a_proxy(
    tiny_model: Path, vllm_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM's client trusts the environment; the runner does not for a loopback server. A proxy that
    refuses every connection, and no NO_PROXY: the fresh `vllm` executable fails, the runner does not."""
    vllm = str(vllm_python.parent / "vllm")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead_proxy = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: refused
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", dead_proxy)
        monkeypatch.setenv("http_proxy", dead_proxy)
        with zero_server(ttft_ms=1, itl_ms=1) as (url, _pid):
            with BenchClient(vllm) as client:
                assert client.run(_args(tiny_model, url, tmp_path, "warm"), tmp_path / "warm.log", 120) == 0
            stock = [vllm, *_args(tiny_model, url, tmp_path, "fresh")]
            fresh = subprocess.run(stock, capture_output=True, text=True, check=False)
    assert json.loads((tmp_path / "warm.json").read_text())["completed"] == 6
    # The stock client went to the proxy: every request failed there.
    cold = json.loads((tmp_path / "fresh.json").read_text())
    assert fresh.returncode == 0 and cold["completed"] == 0 and cold["failed"] == 6
    assert all(dead_proxy.removeprefix("http://") in error for error in cold["errors"])


def test_a_vllm_without_an_environment_is_named(tmp_path: Path) -> None:
    with pytest.raises(BenchProcessError, match="ACCELBENCH_VLLM_BIN: 'no-such-vllm' is not an executable"):
        vllm_interpreter("no-such-vllm")
    lone = tmp_path / "bin" / "vllm"
    lone.parent.mkdir()
    lone.write_text("#!/bin/sh\n")
    lone.chmod(0o755)
    with pytest.raises(BenchProcessError, match="no python beside"):
        vllm_interpreter(str(lone))


@pytest.mark.vllm
def test_a_runner_borrowed_from_a_fork_server_runs_levels_pinned_and_dies_with_its_borrower(
    tiny_model: Path, vllm_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fork server the test suite runs for its lanes (tests/support/fork_server.py): a runner started
    with its socket named borrows a child forked there, with the runner's CPUs, and answers as its own."""
    vllm = str(vllm_python.parent / "vllm")
    server, path, own = _the_runs_fork_server(vllm_python, tmp_path)
    try:
        # A runner of another environment is refused (it imports its own vLLM): another Python (this
        # process's), or other values of what vLLM's imports read (Hugging Face's cache folder).
        assert bench_runner.borrow(str(path)) is None
        with socket.socket(socket.AF_UNIX) as conn, open(os.devnull) as null:
            conn.connect(str(path))
            env = dict(os.environ) | {"HF_HOME": str(tmp_path / "hf")}
            request = {"prefix": str(vllm_python.parents[1]), "env": env, "cwd": str(tmp_path), "cpus": [0]}
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [null.fileno()] * 3)
            assert conn.makefile().readline() == ""  # closed: no runner forked
        monkeypatch.setenv(FORK_SERVER, str(path))
        monkeypatch.chdir(tmp_path)  # this test's runner, by its folder, among those other lanes borrow
        with zero_server(ttft_ms=2, itl_ms=1) as (url, _pid), BenchClient(vllm, cpus={0}) as client:
            codes = [
                client.run(_args(tiny_model, url, tmp_path, f"l{i}"), tmp_path / f"l{i}.log", 120)
                for i in (1, 2)
            ]
            wrong = [*_args(tiny_model, url, tmp_path, "bad"), "--no-such-flag"]
            assert (
                codes == [0, 0] and client.run(wrong, tmp_path / "bad.log", 120) == 2 and client.starts == 1
            )
            assert client.proc is not None
            borrower = psutil.Process(client.proc.pid)
            (runner,) = _in_folder(server.children(), tmp_path)
            assert runner.cpu_affinity() == [0] and runner.cwd() == os.getcwd()
            # The borrower never imported vLLM (no torch in it); its runner did, in the fork server.
            assert not any("libtorch" in m.path for m in borrower.memory_maps())
            assert any("libtorch" in m.path for m in runner.memory_maps())
            # Its borrower killed during a level: the level gets the signal's status, and the runner is gone.
            threading.Timer(1.0, os.kill, (borrower.pid, signal.SIGKILL)).start()
            assert (
                client.run(_args(tiny_model, url, tmp_path, "killed", prompts=400), tmp_path / "k.log", 120)
                == -9
            )
            runner.wait(10)
        assert json.loads((tmp_path / "l2.json").read_text())["completed"] == 6
        assert "Serving Benchmark Result" in (tmp_path / "l1.log").read_text()
    finally:
        if own:  # not the run's, which the other lanes use
            server.kill()
            server.wait()


def _named_server(path: Path) -> int | None:
    """The pid of the fork server that listens at `path`, by its command line (which the runners forked
    from it share: the one whose parent is none of them)."""
    found = {
        proc.pid: proc.info["ppid"]
        for proc in psutil.process_iter(["cmdline", "ppid"])
        if (proc.info["cmdline"] or [])[-2:] == ["--fork-server", str(path)]
    }
    return next((pid for pid, parent in found.items() if parent not in found), None)


def _in_folder(procs: list[psutil.Process], folder: Path) -> list[psutil.Process]:
    """The processes among `procs` working in `folder` (a forked runner's environment is not in /proc: its
    folder is)."""
    found = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):  # another lane's runner, ended meanwhile
            if proc.cwd() == str(folder):
                found.append(proc)
    return found


def _the_runs_fork_server(vllm_python: Path, folder: Path) -> tuple[psutil.Process, Path, bool]:
    """The run's fork server once it listens (tests/conftest.py names it; asking for `vllm_python` started
    it), or, in a process with none named, one of this test's own."""
    own = FORK_SERVER not in os.environ
    path = fork_server.start(vllm_python, folder)[1] if own else Path(os.environ[FORK_SERVER])
    deadline = time.monotonic() + 300
    while not path.exists() or (pid := _named_server(path)) is None:  # it listens once vLLM is imported
        assert time.monotonic() < deadline, f"no fork server listening at {path}"
        time.sleep(0.2)
    return psutil.Process(pid), path, own
