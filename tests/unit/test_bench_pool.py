"""`bench_client.pooled`: a process's idle `vllm bench serve` runner is lent to its next benchmark, one in use
never is, a dead one is replaced and closed, and runners pinned differently are different runners. A stand-in
interpreter that only reads its input plays the runner (tests/e2e/test_bench_client.py has real ones)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from accelbench.loadgen import bench_client
from accelbench.loadgen.bench_client import pooled


@pytest.fixture
def vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A `vllm` whose environment's python waits for the end of its input, as the runner does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("vllm", "exit 1"), ("python", "exec cat > /dev/null")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(bench_client, "_IDLE", {})  # this test's pool only
    yield str(bin_dir / "vllm")
    bench_client._close_idle()


def test_an_idle_runner_is_lent_again_one_in_use_never_and_a_dead_one_is_replaced(vllm: str) -> None:
    with pooled(vllm) as first:
        assert first.proc is not None and first.proc.poll() is None
        with pooled(vllm) as second:  # the first is in use: a runner of its own
            assert second is not first
    with pooled(vllm) as again:
        assert again in (first, second) and again.proc is not None and again.starts == 1
        pid = again.proc.pid
    os.kill(pid, signal.SIGKILL)  # dies while idle
    assert again.proc is not None
    again.proc.wait()
    taken = [pooled(vllm) for _ in range(2)]
    runners = [t.__enter__() for t in taken]
    assert again not in runners and again.proc is None  # replaced, and its pipes closed
    assert all(r.proc is not None and r.proc.poll() is None for r in runners)
    for t in taken:
        t.__exit__(None, None, None)


def test_runners_pinned_elsewhere_are_not_lent(vllm: str) -> None:
    with pooled(vllm) as loose:
        pass
    with pooled(vllm, {0}) as pinned:
        assert pinned is not loose
    with pooled(vllm) as again:
        assert again is loose
