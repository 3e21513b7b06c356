"""Run `vllm serve` as a child process with the pod's arguments, and always stop it.

The vLLM interpreter is a separate environment from Airflow's (ACCELBENCH_VLLM_PYTHON). The server
gets its own process group, so stopping it stops the engine and worker processes too; it also
receives SIGKILL if the process that started it dies (PR_SET_PDEATHSIG). The engine processes vLLM
starts do not get that signal, so each launch also leaves a pid file in its work directory: the next
attempt for the same spec (a retry after the worker died) stops whatever is left of that process group
before it starts its own server.

With ACCELBENCH_BENCH_FORK_SERVER set (the test suite's fork server, `loadgen/bench_runner.py`), the server
is borrowed: the process started here hands its descriptors, folder, CPUs and environment to a `vllm serve`
forked where vLLM is already imported (its API server's import, ~6 s of CPU a start), forwards the signals
it is stopped with, exits as the server does, and takes the server down when it dies; the server's pid is
in `server.borrowed`, so that its processes are the server's tree here. Where no fork server serves it, the
process execs `vllm serve` itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil
from packaging.version import InvalidVersion, Version

from accelbench.config import Settings, env_name
from accelbench.core.server_log import LOG_HEAD_BYTES, reported_quantization
from accelbench.core.spec import ServerSpec
from accelbench.core.startup_phases import POLL_S, LogStamps, Startup, local_startup
from accelbench.errors import AccelbenchError, ConfigError
from accelbench.lifetime import die_with_parent, watch_group
from accelbench.loadgen.bench_client import RUNNER
from accelbench.loadgen.driver import SERVER_LOG_TAIL_LINES, clip_log_tail
from accelbench.tiers import CPU, of_runtime, recipe_for

log = logging.getLogger(__name__)
VLLM_PYTHON_SETTING = env_name("vllm_python")
SERVER_CPUS_SETTING = env_name("local_server_cpus")
CLIENT_CPUS_SETTING = env_name("local_client_cpus")
PORT_ATTEMPTS = 3  # free_port() cannot reserve the port: another process may bind it before vLLM does
PORT_TAKEN = "Address already in use"
TMPDIR_PREFIX = "abv-"  # a server's private TMPDIR: short, for vLLM's ZeroMQ socket paths (under 108 bytes)
FORK_SERVER_SETTING = env_name("bench_fork_server")
BORROWED_PID_FILE = "BORROWED_SERVER_PID_FILE"  # bench_runner.py's name for it (it imports no accelbench)


def fork_server() -> Path | None:
    """ACCELBENCH_BENCH_FORK_SERVER: where local servers borrow their API server (the test suite's)."""
    return Settings.from_env("bench_fork_server").loadgen.bench_fork_server


class ServerStartError(AccelbenchError):
    """The server exited or never became healthy; the message carries the tail of its log."""


def vllm_python(runtime: str = CPU.runtime) -> Path:
    """A runtime's local vLLM interpreter: its setting, else its environment folder beside the repo or cwd."""
    env = of_runtime(runtime).local
    if env is None:
        raise ConfigError(
            "execution_mode",
            "local",
            f"{runtime} has no local build: its instance types run in kubernetes mode only",
        )
    raw = Settings.from_env(env.setting).value(env.setting)
    if raw:
        path = Path(raw).expanduser()
        if not path.is_file():
            raise ConfigError(env_name(env.setting), raw, "no such interpreter")
        return path
    for root in (Path.cwd(), Path(__file__).resolve().parents[3]):
        candidate = root / env.folder / "bin" / "python"
        if candidate.is_file():
            return candidate
    raise ConfigError(env_name(env.setting), None, f"not set and no {env.folder} found (run {env.installer})")


def local_vllm_version(python: Path | None = None) -> str:
    """The vLLM version local mode serves (the vLLM environment's, e.g. 0.32.0 for 0.32.0+cpu)."""
    python = python or vllm_python()
    probe = "import importlib.metadata as m; print(m.version('vllm'))"  # no vllm import: milliseconds
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    try:
        return Version(out.stdout.strip()).public
    except InvalidVersion:
        raise ConfigError(
            VLLM_PYTHON_SETTING, str(python), f"cannot read its vLLM version: {out.stderr.strip()[-300:]}"
        ) from None


def local_runtime(runtime: str) -> tuple[str, str]:
    """(version, interpreter) of the vLLM local mode serves `runtime` with; a ConfigError saying why this
    worker cannot (no local build, no environment, or for GPU types no NVIDIA GPU)."""
    python = vllm_python(runtime)
    if why := of_runtime(runtime).local_problem():
        raise ConfigError("execution_mode", "local", why)
    return local_vllm_version(python), str(python)


def parse_cpus(name: str, raw: str) -> set[int] | None:
    if not raw.strip():
        return None
    try:
        cpus = {int(c) for c in raw.replace(" ", "").split(",") if c}
    except ValueError:
        raise ConfigError(name, raw, "expected a comma-separated list of CPU numbers") from None
    if not cpus <= set(range(os.cpu_count() or 1)):
        raise ConfigError(name, raw, f"this machine has CPUs 0-{(os.cpu_count() or 1) - 1}")
    return cpus


@dataclass(frozen=True)
class Pinning:
    """Engine core + worker on `server` CPUs, API server + load generator on `client` CPUs."""

    server: set[int]
    client: set[int]

    @classmethod
    def from_env(cls) -> Pinning | None:
        """Explicit settings win; on a machine with 2-4 cores pin by default (FACTS.md section 7)."""
        settings = Settings.from_env("local_server_cpus", "local_client_cpus")
        server = parse_cpus(SERVER_CPUS_SETTING, settings.local.local_server_cpus)
        client = parse_cpus(CLIENT_CPUS_SETTING, settings.local.local_client_cpus)

        if bool(server) != bool(client):
            raise ConfigError(
                SERVER_CPUS_SETTING if not server else CLIENT_CPUS_SETTING,
                None,
                f"set both {SERVER_CPUS_SETTING} and {CLIENT_CPUS_SETTING}, or neither",
            )
        if server and client:
            if server & client:
                raise ConfigError(CLIENT_CPUS_SETTING, sorted(client), f"overlaps {SERVER_CPUS_SETTING}")
            return cls(server, client)
        n = os.cpu_count() or 1
        if server or client or not 2 <= n <= 4:
            return None
        return cls(set(range(n // 2, n)), set(range(n // 2)))

    def describe(self) -> dict[str, list[int]]:
        return {"server_cpus": sorted(self.server), "client_cpus": sorted(self.client)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalServer:
    """`with LocalServer(spec, workdir) as server:` -> a healthy server at server.url, stopped on exit."""

    spec: ServerSpec
    workdir: Path
    startup_timeout_s: float = 300.0
    pinning: Pinning | None = None
    python: Path | None = None
    port: int = 0
    journal: Path | None = None  # a JSON-lines file that gets one line per launch
    extra_env: Mapping[str, str] = field(default_factory=dict)  # e.g. vLLM's development API (a reset)
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    startup_s: float | None = field(default=None, init=False)
    startup: Startup | None = field(default=None, init=False)  # its phases (accelbench.core.startup_phases)
    tmpdir: Path | None = field(default=None, init=False)
    _stopped: bool = field(default=False, init=False)
    _watchdog: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "server.log"

    @property
    def pid_path(self) -> Path:
        return self.workdir / "server.pid"

    def stop_orphans(self, grace_s: float = 10.0) -> list[int]:
        """Stop what an earlier attempt's server left running (its worker died); the pids stopped."""
        try:
            record = json.loads(self.pid_path.read_text())
        except (OSError, ValueError):
            return []
        pgid = int(record["pgid"])
        left = []
        for proc in psutil.process_iter(["pid"]):
            with contextlib.suppress(psutil.Error):
                # The group id alone could be reused: only processes born with or after its leader count.
                if os.getpgid(proc.pid) == pgid and proc.create_time() >= record["started"]:
                    left.append(proc)
        if left:
            log.warning(
                "stopping %d process(es) of an earlier attempt's vLLM server (process group %d): %s",
                len(left),
                pgid,
                ", ".join(f"{p.pid} {p.info.get('name') or ''}".strip() for p in left),
            )
            for proc in left:
                with contextlib.suppress(psutil.Error):
                    proc.terminate()
            _, alive = psutil.wait_procs(left, timeout=grace_s)
            for proc in alive:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            psutil.wait_procs(alive, timeout=5)
        self._remove_tmpdir_of(record)
        self.pid_path.unlink(missing_ok=True)
        return [p.pid for p in left]

    @staticmethod
    def _remove_tmpdir_of(record: dict[str, Any]) -> None:
        """The earlier attempt's private TMPDIR (its ZeroMQ sockets), which its own stop would have removed:
        only one of ours (directly under the temp folder, named as `_tmpdir` names them)."""
        tmp = Path(str(record.get("tmpdir") or ""))
        if tmp.name.startswith(TMPDIR_PREFIX) and tmp.parent == Path(tempfile.gettempdir()):
            shutil.rmtree(tmp, ignore_errors=True)

    def command(self) -> list[str]:
        python = self.python or vllm_python(self.spec.runtime)
        args = recipe_for(self.spec.runtime).args(self.spec, host="127.0.0.1", port=self.port)
        if fork_server():  # borrowed from the fork server (above)
            return [str(python), "-P", str(RUNNER), "--server", "serve", *args]
        return [str(python.parent / "vllm"), "serve", *args]

    @property
    def borrowed_path(self) -> Path:
        return self.workdir / "server.borrowed"

    @property
    def server_pid(self) -> int | None:
        """The API server's process: the one started here, or the `vllm serve` it borrowed."""
        if self.process is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            return int(self.borrowed_path.read_text())
        return self.process.pid

    def environment(self) -> dict[str, str]:
        cache = self.workdir / "cache"
        # The server gets no cloud, Airflow or catalog credentials: only what a vLLM process needs (the AWS
        # settings only to stream its weights, ACCELBENCH_WEIGHTS_URI).
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AIRFLOW", "AWS_", "ACCELBENCH_"))
            and not any(word in k for word in ("SECRET", "PASSWORD"))
        }
        if self.spec.weights_uri:  # it streams its weights from S3, reading the bucket as this worker does
            env |= {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        env |= recipe_for(self.spec.runtime).env(self.spec)
        if fork := fork_server():
            env |= {FORK_SERVER_SETTING: str(fork), BORROWED_PID_FILE: str(self.borrowed_path)}
        env |= {
            "VLLM_CACHE_ROOT": str(cache / "vllm"),
            "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
            "TMPDIR": str(self._tmpdir()),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        return env | dict(self.extra_env)

    def _tmpdir(self) -> Path:
        """A short private TMPDIR: vLLM's ZeroMQ IPC sockets live there and need paths < 108 bytes."""
        if self.tmpdir is None:
            self.tmpdir = Path(tempfile.mkdtemp(prefix=TMPDIR_PREFIX))
        return self.tmpdir

    def start(self) -> LocalServer:
        """Launch and wait for /health; an auto-chosen port taken meanwhile is retried on a new one."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.stop_orphans()
        auto_port = not self.port
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.port = free_port() if auto_port else self.port
            try:
                self._launch()
                break
            except ServerStartError:
                if not (auto_port and attempt < PORT_ATTEMPTS and PORT_TAKEN in self.log_tail()):
                    raise
                log.warning("port %d was taken before vLLM bound it; retrying on another", self.port)
                self._stopped = False
        if self.pinning:
            self.pin()
        return self

    def _share_model_infos(self) -> None:
        """vLLM inspects a model class in a subprocess at every start (~7 s of CPU on 2 cores) unless its
        `modelinfos` cache has the answer. The answer depends only on vLLM's own code (each entry carries
        the hash of its module and a stale one is ignored; vLLM writes entries atomically), so every server
        of one vLLM environment shares one cache beside it; the rest of VLLM_CACHE_ROOT stays per server.
        An environment that cannot be written to (a read-only image) keeps the per-server cache."""
        python = self.python or vllm_python(self.spec.runtime)
        shared = python.parents[1] / "var" / "vllm-modelinfos"
        link = self.workdir / "cache" / "vllm" / "modelinfos"
        try:
            shared.mkdir(parents=True, exist_ok=True)
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink() and not link.exists():
                link.symlink_to(shared, target_is_directory=True)
        except OSError as exc:
            log.info("vLLM's model-info cache stays per server (%s)", exc)

    def _launch(self) -> None:
        self._share_model_infos()
        cmd = self.command()
        log.info("starting vLLM server: %s", " ".join(cmd))
        started, started_at = time.monotonic(), datetime.now(UTC).isoformat()
        stamps = LogStamps(self.log_path)
        self.borrowed_path.unlink(missing_ok=True)
        try:
            with self.log_path.open("wb") as out:
                self.process = subprocess.Popen(
                    cmd,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=self.environment(),
                    cwd=self.workdir,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
            with contextlib.suppress(psutil.NoSuchProcess):  # gone already: nothing can be left behind
                born = psutil.Process(self.process.pid).create_time()
                record = {"pgid": self.process.pid, "started": born, "tmpdir": str(self._tmpdir())}
                self.pid_path.write_text(json.dumps(record))
                self._watchdog = watch_group(self.process.pid, born)  # the engine core dies with us too
            if self.journal:
                self._record_start()
            healthy = self._wait_healthy(started, stamps)
        except BaseException:
            self.stop()
            raise
        self.startup_s = healthy - started
        self.startup = local_startup(stamps, started, healthy, started_at)
        phases = ", ".join(f"{k} {v:.1f}" for k, v in self.startup.phases.items() if v is not None)
        log.info("vLLM server healthy at %s after %.1f s (%s)", self.url, self.startup_s, phases)

    def _record_start(self) -> None:
        """One line per server process launched: what the campaign-overhead benchmark counts."""
        assert self.journal is not None and self.process is not None
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        line = {"at": time.time(), "pid": self.process.pid, "port": self.port, "workdir": str(self.workdir)}
        with self.journal.open("a") as fh:
            fh.write(json.dumps(line) + "\n")

    def reported_quantization(self) -> str | None:
        """What the server's log says it served (`accelbench.core.server_log`): its start is enough, the
        scheme and kernel lines come while the model loads."""
        try:
            with self.log_path.open(errors="replace") as fh:
                return reported_quantization(fh.read(LOG_HEAD_BYTES))
        except OSError:
            return None

    def log_tail(self, lines: int = 40) -> str:
        try:
            with self.log_path.open(errors="replace") as fh:
                return "".join(deque(fh, maxlen=lines))
        except OSError:
            return "<no server log>"

    def exit_status(self) -> tuple[int, str] | None:
        """(exit code, last lines of its log) once the server has ended, None while it runs: local mode's
        Driver.server_exit, so a level says why its server died. A process killed by signal N reports
        128 + N, as a container's exit code does (137: SIGKILL), so both modes read the same."""
        code = self.process.poll() if self.process is not None else None
        if code is None:
            return None
        return (128 - code if code < 0 else code), clip_log_tail(self.log_tail(SERVER_LOG_TAIL_LINES))

    def _wait_healthy(self, started: float, stamps: LogStamps) -> float:
        """The monotonic time /health first answered; `stamps` reads the log at every poll."""
        assert self.process is not None
        deadline = started + self.startup_timeout_s
        while time.monotonic() < deadline:
            stamps.read(time.monotonic())
            code = self.process.poll()
            if code is not None:
                raise ServerStartError(
                    f"vLLM server exited with code {code} before it was healthy; "
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        healthy = time.monotonic()
                        stamps.read(healthy)
                        return healthy
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(POLL_S)
        raise ServerStartError(
            f"vLLM server not healthy after {self.startup_timeout_s:.0f} s; "
            f"last lines of {self.log_path}:\n{self.log_tail()}"
        )

    def tree(self) -> list[psutil.Process]:
        """The server and every process it started (engine core, workers); a borrowed server's too."""
        if self.process is None:
            return []
        found: list[psutil.Process] = []
        for pid in dict.fromkeys((self.process.pid, self.server_pid)):
            with contextlib.suppress(psutil.NoSuchProcess, TypeError):
                root = psutil.Process(pid)
                found += [root, *root.children(recursive=True)]
        return found

    def pin(self) -> None:
        """API server on the client CPUs (beside the load generator); engine and workers on the rest."""
        assert self.pinning is not None
        server_pid = self.server_pid  # None: tree() is empty
        for proc in self.tree():
            cpus = self.pinning.client if proc.pid == server_pid else self.pinning.server
            with contextlib.suppress(psutil.Error):
                for thread in proc.threads():
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(thread.id, cpus)
        log.info("pinned vLLM server: %s", self.pinning.describe())

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM the whole process group, then SIGKILL what is left; safe to call twice."""
        try:
            self._stop_processes(grace_s)
        finally:
            if self.tmpdir is not None:
                shutil.rmtree(self.tmpdir, ignore_errors=True)
                self.tmpdir = None

    def _stop_processes(self, grace_s: float) -> None:
        # The group outlives its leader: killpg reaches engine/worker processes even after the API
        # server itself has exited. Once stopped, never signal the group again (its id may be reused).
        if self.process is None or self._stopped:
            return
        self._stopped = True
        if self._watchdog is not None:  # stopped here, by us: the watchdog's work is done
            self._watchdog.kill()
            self._watchdog.wait()
        pgid = self.process.pid
        leftovers = self.tree()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        _, alive = psutil.wait_procs(leftovers, timeout=grace_s)
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        self.pid_path.unlink(missing_ok=True)
        log.info("vLLM server stopped (exit code %s)", self.process.returncode)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
