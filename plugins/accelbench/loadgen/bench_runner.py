"""Run `vllm bench serve` many times in one process, so vLLM is imported once per server, not per level.

Importing vLLM takes about 9 s on one core: as a fresh process per level, that start-up was 43% of a
small local campaign's wall time (benchmarks/campaign_overhead.py). This script runs in the vLLM
environment's Python (stdlib and vLLM only: it never imports accelbench) and goes through vLLM's own
command line, `vllm.entrypoints.cli.main.main`, for every level: the same parsing, validation and
benchmark code as the `vllm` executable.

One change to vLLM's client, for a server on loopback (always the case in this suite: the local server,
or the benchmark pod's own server container): its aiohttp session is opened with trust_env=False.
vLLM opens it with trust_env=True, which makes every request read ~/.netrc and the proxy variables in
two worker-thread hops after the request's start stamp: about 1 ms added to every TTFT and E2EL on one
core (benchmarks/loadgen_accuracy.py), and an HTTP_PROXY without NO_PROXY would route the benchmark
through the proxy. A non-loopback --base-url keeps vLLM's behaviour.

A second: vLLM 0.32's send schedule (`vllm.benchmarks.serve.get_request`, request rates and timed traces
alike) waits on the wall clock (`time.time()`), while each request's send stamp (`start_time`) and the
benchmark's duration are on the monotonic clock (`time.perf_counter()`). On a host whose wall clock is being
slewed or stepped by its time sync, the two part: on this suite's CI VM the wall clock ran 0.5% fast against
the monotonic one (10.05 s for 10.00 s), so a 27 s trace was sent 0.14 s early by its end, and one step made
a replay's median send 1.9 s early against its first. The schedule here reads the monotonic clock, the one
its stamps and asyncio's sleeps use (`schedule_on_the_monotonic_clock`).

Protocol (bench_client.BenchClient is the other end): one line `{"ready": <vllm version>}` on stdout
once vLLM is imported; then, for each JSON line `{"args": [...], "log": path}` on stdin, the run's
stdout and stderr go to `log` and one line `{"exit": code}` comes back. It exits at end of input.
Anything printed between runs goes to this process's stderr.

A fork server (`bench_runner.py --fork-server PATH`) imports vLLM once and forks a runner for each process
that asks on the Unix socket PATH: a runner started with ACCELBENCH_BENCH_FORK_SERVER=PATH hands its stdin,
stdout and stderr, its environment, folder and CPUs to a child forked there (`borrow`) and exits as that
child does; the child dies with it. Where no fork server answers, or it serves another environment (another
Python, or other values of what the imports read: READ_AT_IMPORT), the runner imports vLLM itself. The test
suite runs one per lane: its campaigns start ~20 runners, each of which paid the import (~9 CPU-s).
A borrowed `vllm serve` (`--server`) forks its engine core from itself too (`_fork_the_engine_core`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from typing import IO, Any, NoReturn
from urllib.parse import urlsplit

TRUST_ENV = [True]  # for the run in progress: False when its server is on loopback
FORK_SERVER = "ACCELBENCH_BENCH_FORK_SERVER"  # accelbench.config's name for it (this script never imports it)
# Variables vLLM, Hugging Face's libraries or torch may read when imported (Hugging Face's cache folders and
# offline switch are constants of its modules): a fork server serves only a borrower that has its values.
# Its tokens are read when a request is made.
READ_AT_IMPORT = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "TOKENIZERS_", "VLLM_", "TORCH", "OMP_", "PYTHON")
READ_PER_CALL = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}
# A server's own variables that its vLLM reads when it runs, not when imported (vllm.envs reads each on use;
# the compile caches are read when a compilation starts): a server that differs from the fork server only
# in these is served. Hugging Face's offline switches are read at import: a server needs the fork server's.
SERVER_READ_LATER = ("VLLM_", "TORCHINDUCTOR_CACHE_DIR", "PYTHONHASHSEED")
BORROWED_PID_FILE = "BORROWED_SERVER_PID_FILE"


def loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def trust_env_only_off_loopback() -> None:
    """Open vLLM's aiohttp sessions with trust_env=False while a loopback server is benchmarked."""
    import aiohttp

    original = aiohttp.ClientSession.__init__

    def init(self: aiohttp.ClientSession, *args: Any, **kwargs: Any) -> None:
        kwargs["trust_env"] = bool(kwargs.get("trust_env", False)) and TRUST_ENV[0]
        original(self, *args, **kwargs)

    aiohttp.ClientSession.__init__ = init  # type: ignore[method-assign]  # a deliberate patch of vLLM's sessions


def schedule_on_the_monotonic_clock() -> None:
    """Make `vllm.benchmarks.serve`'s `time.time()` (its send schedule's only clock) the monotonic clock."""
    import time
    import types

    import vllm.benchmarks.serve as serve

    clock = types.ModuleType("time", "the time module, with time() the monotonic clock (bench_runner)")
    clock.__dict__.update({k: v for k, v in vars(time).items() if not k.startswith("__")})
    clock.time = time.perf_counter  # type: ignore[attr-defined]
    serve.time = clock  # a deliberate patch of vLLM's schedule clock


def run(args: list[str], log_path: str) -> int:
    from vllm.entrypoints.cli.main import main

    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    sys.argv = ["vllm", *args]
    base_url = args[args.index("--base-url") + 1] if "--base-url" in args[:-1] else ""
    TRUST_ENV[0] = not loopback(base_url)
    try:
        main()
        code = 0
    except SystemExit as exc:  # argparse and explicit exits: the code the executable would return
        code = _exit_code(exc)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    return code


def _exit_code(exc: SystemExit) -> int:
    """The code an executable that raised `exc` would return."""
    return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


def prepare(servers: bool = False) -> str:
    """Import vLLM's benchmark and CLI code, patched as above (and, for a fork server that also serves
    `vllm serve` processes, the API server's code); vLLM's version."""
    trust_env_only_off_loopback()
    import vllm
    import vllm.benchmarks.serve
    import vllm.entrypoints.cli.main

    if servers:
        import vllm.entrypoints.cli.serve
        import vllm.entrypoints.openai.api_server

    schedule_on_the_monotonic_clock()
    return str(vllm.__version__)


def control_channel() -> IO[str]:
    """This process's stdout, kept for the protocol; anything else printed (vLLM's import, a run) goes to
    stderr, never into the control channel."""
    control = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return control


def serve(control: IO[str], version: str) -> int:
    """The protocol above on this process's stdin and `control` (vLLM imported)."""
    control.write(json.dumps({"ready": version}) + "\n")
    for line in sys.stdin:
        if line.strip():
            job = json.loads(line)
            control.write(json.dumps({"exit": run(job["args"], job["log"])}) + "\n")
    return 0


def borrow(path: str, server: list[str] | None = None) -> int | None:
    """Hand this process's stdin, stdout and stderr, environment, folder and CPUs to a runner forked by the
    fork server at `path` (or, with `server`, a `vllm <server...>` process); that child's exit status (a
    signal it died of, this process dies of too). None when no fork server of this environment answers
    there. A server's child gets the signals this process is asked to stop with, and its pid is written to
    $BORROWED_SERVER_PID_FILE, so that whoever started this process sees the server's processes."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    request = {
        "prefix": sys.prefix,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "cpus": sorted(os.sched_getaffinity(0)),
        "server": server,
    }
    try:
        conn.connect(path)
        socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
        replies = conn.makefile()
        forked = replies.readline()  # {"pid": n}, or nothing: not this environment's fork server
    except OSError:
        conn.close()
        return None
    if not forked:
        print(f"bench_runner: the fork server at {path} serves another environment", file=sys.stderr)
        conn.close()
        return None
    if server is not None:
        child = int(json.loads(forked)["pid"])
        if pid_file := os.environ.get(BORROWED_PID_FILE):
            with open(pid_file, "w") as fh:
                fh.write(str(child))
        for sig in (signal.SIGTERM, signal.SIGINT):  # a graceful stop reaches the server itself
            signal.signal(sig, lambda signum, _frame: os.kill(child, signum))
    with conn, replies:
        ended = replies.readline()  # the child's wait status, when it ends
    if not ended:
        print(f"bench_runner: the fork server at {path} went away", file=sys.stderr)
        return 1
    status = json.loads(ended)["status"]
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status)


def _die_with(pid: int, end: Callable[[], object] | None = None) -> None:
    """In a forked child: exit at once when the process that borrowed it ends (its driver's PDEATHSIG, a
    kill, an exit), as a child its driver started itself would (`end`: how; by default at once)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        os._exit(1)

    def watch() -> None:
        select.select([fd], [], [])
        (end or (lambda: os._exit(1)))()

    threading.Thread(target=watch, daemon=True).start()


def _runner(
    borrower: int, fds: list[int], env: dict[str, str], request: dict[str, Any], version: str
) -> None:
    """The forked child: the borrower's descriptors, folder and CPUs, `env`, then the runner's loop."""

    def body() -> int:
        _die_with(borrower)
        _become(fds, env, request)
        return serve(control_channel(), version)

    _exit_after(body)


def _exit_after(body: Callable[[], int]) -> NoReturn:
    """A forked child's end: `body`'s code (1 for an error it raised, printed), streams flushed, no cleanup
    of the fork server's (its atexit handlers, its threads) run."""
    try:
        code = body()
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _become(fds: list[int], env: dict[str, str], request: dict[str, Any]) -> None:
    """In a forked child: the borrower's stdin, stdout and stderr, environment, folder and CPUs."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(request["cwd"])
    os.sched_setaffinity(0, request["cpus"])


def _kill_tree_and_exit() -> None:
    """A borrowed server whose borrower died: its own children (the engine core) first, then itself."""
    with contextlib.suppress(Exception):
        import psutil  # vLLM's dependency

        for proc in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                proc.kill()
    os._exit(1)


def _server(borrower: int, fds: list[int], env: dict[str, str], request: dict[str, Any]) -> None:
    """The forked child of a server request: the borrower's descriptors, folder, CPUs and environment (its
    own session, as the `vllm` it stands for), then vLLM's command line with the request's argv."""

    def body() -> int:
        os.setsid()  # the fork server's signals are not the server's
        _die_with(borrower, _kill_tree_and_exit)
        _become(fds, env, request)
        import tempfile

        tempfile.tempdir = None  # the server's TMPDIR (its ZeroMQ sockets), not the fork server's
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _fork_the_engine_core()
        from vllm.entrypoints.cli.main import main as vllm_main

        sys.argv = ["vllm", *request["server"]]
        try:
            vllm_main()
        except SystemExit as exc:
            return _exit_code(exc)
        return 0

    _exit_after(body)


def _fork_the_engine_core() -> None:
    """A borrowed server forks its engine core from itself, vLLM imported, instead of spawning a fresh Python
    that imports it again (~5 s of a tiny server's ~9 s start, benchmarks/server_start_in_tests.py).

    Fork is vLLM's own default start method (`VLLM_WORKER_MULTIPROC_METHOD`); its CPU platform forces spawn
    so that the engine's OpenMP runtime never starts in a copy of a process that already ran one. Here the
    API server has run no OpenMP region when it starts the engine core (its torch computes nothing), which is
    what vLLM's GPU path relies on too. The server is the suite's only: campaigns outside the tests never
    borrow, and their engine cores are spawned as vLLM decides."""
    import multiprocessing

    import vllm.v1.engine.utils

    vllm.v1.engine.utils.get_mp_context = lambda: multiprocessing.get_context("fork")


def fork_server(path: str) -> int:
    """Import vLLM once, then fork a runner for each borrower that connects to `path` (above); print
    `{"ready": version}` once listening. Runs until killed."""
    before = dict(os.environ)
    version = prepare(servers=True)
    # What vLLM's import set in the environment: a runner's own import would have set it too.
    added = {k: v for k, v in os.environ.items() if before.get(k) != v}
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print(json.dumps({"ready": version}), flush=True)
    while True:
        conn, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        while message and not message.endswith(b"\n") and (more := conn.recv(1 << 16)):
            message += more  # a request longer than one read
        try:
            request = json.loads(message)
        except ValueError:  # cut short, or not JSON: refused below
            request = None
        request = request if isinstance(request, dict) else {}
        peer, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        # Refused: another user (a runner runs as this one), another environment's runner or server (above).
        server = request.get("server")
        later = SERVER_READ_LATER if server else ()
        if (
            uid != os.getuid()
            or len(fds) != 3
            or request.get("prefix") != sys.prefix
            or _imported(request.get("env", {}), later) != _imported(before, later)
        ):
            conn.close()
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            listener.close()
            conn.close()
            if server:
                _server(peer, fds, request["env"] | added, request)
            _runner(peer, fds, request["env"] | added, request, version)
        for fd in fds:
            os.close(fd)
        threading.Thread(target=_report, args=(conn, pid), daemon=True).start()


def _imported(env: Mapping[str, str], later: tuple[str, ...] = ()) -> dict[str, str]:
    """What of `env` the imports may have read (above), less the variables `later` names (prefixes)."""
    return {
        k: v
        for k, v in env.items()
        if k.startswith(READ_AT_IMPORT) and k not in READ_PER_CALL and not k.startswith(later or ("\0",))
    }


def _report(conn: socket.socket, pid: int) -> None:
    """Tell the borrower its runner's pid, then its wait status when it ends."""
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    with conn, contextlib.suppress(OSError):
        conn.sendall(json.dumps({"status": status}).encode() + b"\n")


def main() -> int:
    if sys.argv[1:2] == ["--fork-server"]:
        return fork_server(sys.argv[2])
    if sys.argv[1:2] == ["--server"]:  # `vllm <argv...>`, borrowed where a fork server serves it
        argv = sys.argv[2:]
        if (path := os.environ.get(FORK_SERVER)) and (code := borrow(path, argv)) is not None:
            return code
        vllm = os.path.join(os.path.dirname(sys.executable), "vllm")
        os.execv(vllm, ["vllm", *argv])  # what the server would have been without one
    if (path := os.environ.get(FORK_SERVER)) and (code := borrow(path)) is not None:
        return code
    control = control_channel()
    return serve(control, prepare())


if __name__ == "__main__":
    sys.exit(main())
