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
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
import traceback
from typing import Any
from urllib.parse import urlsplit

TRUST_ENV = [True]  # for the run in progress: False when its server is on loopback


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
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
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


def main() -> int:
    control = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray output between runs: to stderr, never into the control channel
    trust_env_only_off_loopback()
    import vllm
    import vllm.benchmarks.serve
    import vllm.entrypoints.cli.main

    schedule_on_the_monotonic_clock()
    control.write(json.dumps({"ready": vllm.__version__}) + "\n")
    for line in sys.stdin:
        if line.strip():
            job = json.loads(line)
            control.write(json.dumps({"exit": run(job["args"], job["log"])}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
