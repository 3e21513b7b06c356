"""The zero-work server (benchmarks/zero_server.py) for the tests that time it, on no CPU of its own."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

from tests.support.paths import REPO
from tests.support.servers import free_port


@contextlib.contextmanager
def zero_server(
    ttft_ms: float = 0.0,
    itl_ms: float = 0.0,
    degrade_after: int | None = None,
    degrade_slope: float = 1.0,
    degrade_above_rate: float | None = None,
    slow_after_requests: int | None = None,
    slow_factor: float = 1.0,
) -> Iterator[tuple[str, int]]:
    """(base URL, pid) of a zero-work server started as benchmarks/zero_pipeline.py starts one, but not pinned
    to a CPU. In a parallel run the other lane's vLLM engines are pinned to CPU 1 (Pinning's default on a
    2-core machine), and a server pinned beside them was seen to stall 26 times over 0.06 s in 7 minutes, up
    to 3.5 s, where an unpinned one beside it stalled 6 times, up to 0.94 s: the kernel moves it to the
    other CPU. `slow_after_requests`: from that request on, every delay is `slow_factor` times longer (a host
    that slowed)."""
    port = free_port()
    args = ["--port", str(port), "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)]
    if degrade_after is not None:
        args += ["--degrade-after", str(degrade_after)]
    if degrade_above_rate is not None:
        args += ["--degrade-above-rate", str(degrade_above_rate)]
    args += ["--degrade-slope", str(degrade_slope)]
    if slow_after_requests is not None:
        args += ["--slow-after-requests", str(slow_after_requests), "--slow-factor", str(slow_factor)]
    script = REPO / "benchmarks" / "zero_server.py"
    proc = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("ready"), (
            "zero server did not start"
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/health", timeout=1):
                break
            time.sleep(0.05)
        yield url, proc.pid
    finally:  # SIGTERM ends it at once (no handler, no open work to drain); SIGKILL if it ever does not
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
