"""Local execution: a real vLLM CPU server on the locally built model, always stopped."""

from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from accelbench.errors import ConfigError
from accelbench.local.server import TMPDIR_PREFIX, LocalServer, Pinning, ServerStartError, parse_cpus
from accelbench.local.tiny_model import server_spec as tiny_spec

pytestmark = pytest.mark.vllm


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def test_the_session_server_serves_the_tiny_model_pinned(vllm_server: LocalServer) -> None:
    """The session's server (tests/conftest.py, `vllm_server`), started like any LocalServer: it serves the
    tiny model, its engine is pinned. That stopped it leaves nothing behind is checked when the session
    stops it (the fixture's teardown), and so is a second stop."""
    server = vllm_server
    models = _get(f"{server.url}/v1/models")
    assert [m["id"] for m in models["data"]] == ["tiny"]
    assert _get(f"{server.url}/version")["version"].startswith("0.32")
    pids = [p.pid for p in server.tree()]
    assert len(pids) >= 2  # API server + engine core
    assert server.startup_s is not None and server.startup_s > 0
    assert server.pinning == (Pinning({1}, {0}) if (psutil.cpu_count() or 1) >= 2 else None)
    if server.pinning:
        # The engine core: not the process started, nor the API server (a borrowed one's pid is its own).
        engine = next(p for p in server.tree() if p.pid not in (server.process.pid, server.server_pid))
        assert engine.cpu_affinity() == [1]


def test_a_server_that_cannot_start_fails_with_its_log_tail(vllm_python: Path, tmp_path: Path) -> None:
    server = LocalServer(
        tiny_spec(tmp_path / "no-such-model"), tmp_path / "server", python=vllm_python, startup_timeout_s=120
    )
    with pytest.raises(ServerStartError) as err, server:
        pass
    assert "exited with code" in str(err.value) and "no-such-model" in str(err.value)
    assert server.process is not None and server.process.poll() is not None
    assert server.tree() == []


def test_pinning_settings_are_checked(monkeypatch) -> None:
    with pytest.raises(ConfigError, match="ACCELBENCH_LOCAL_SERVER_CPUS='a,b'"):
        parse_cpus("ACCELBENCH_LOCAL_SERVER_CPUS", "a,b")
    with pytest.raises(ConfigError, match="this machine has CPUs"):
        parse_cpus("ACCELBENCH_LOCAL_SERVER_CPUS", "4096")
    monkeypatch.setenv("ACCELBENCH_LOCAL_SERVER_CPUS", "1")
    monkeypatch.setenv("ACCELBENCH_LOCAL_CLIENT_CPUS", "0")
    assert Pinning.from_env() == Pinning({1}, {0})


def test_private_tmpdir_is_removed_on_stop(tmp_path: Path) -> None:
    server = LocalServer(tiny_spec("m"), tmp_path)
    tmp = Path(server.environment()["TMPDIR"])
    assert tmp.is_dir() and len(str(tmp)) < 40
    server.stop()
    assert not tmp.exists()


def test_an_earlier_attempts_tmpdir_is_removed_only_if_it_is_one_of_ours(tmp_path: Path) -> None:
    """An attempt killed with its worker cannot remove its private TMPDIR; the retry's stop_orphans does, from
    the pid file, but only a folder named as LocalServer names them, directly under the temp folder."""
    server = LocalServer(tiny_spec("m"), tmp_path / "work")
    server.workdir.mkdir()
    ours = Path(tempfile.mkdtemp(prefix=TMPDIR_PREFIX))
    elsewhere = tmp_path / f"{TMPDIR_PREFIX}not-under-tmp"
    elsewhere.mkdir()
    for tmp in (ours, elsewhere):
        # No process of this group was born after `started`: nothing to stop, only the folder to remove.
        record = {"pgid": os.getpgid(0), "started": time.time() + 3600, "tmpdir": str(tmp)}
        server.pid_path.write_text(json.dumps(record))
        assert server.stop_orphans() == [] and not server.pid_path.exists()
    assert not ours.exists() and elsewhere.is_dir()
