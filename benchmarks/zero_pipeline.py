"""What the load-generator benchmarks share: the zero-work server as a child process, the tiny tokenizer,
and one run of the real pipeline (Driver -> `vllm bench serve` -> raw evidence -> ingest -> `requests`)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from accelbench.core.evidence import Envelope
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import RawLocation, upload_raw
from accelbench.lake.store import Lake
from accelbench.loadgen.driver import Driver
from accelbench.local.server import free_port
from accelbench.local.tiny_model import server_spec

REPO = Path(__file__).resolve().parents[1]
VLLM_BIN = REPO / ".venv-vllm" / "bin" / "vllm"
CACHE = REPO / "benchmarks" / ".cache"
CLIENT_CPU, SERVER_CPU = 0, 1  # the load generator on one core, the server on the other


def tiny_tokenizer() -> Path:
    """The tiny model's folder (its tokenizer is what `vllm bench serve` needs), built once."""
    out = CACHE / "tiny-model"
    if not (out / "tokenizer.json").exists():
        subprocess.run(
            [str(REPO / ".venv-vllm" / "bin" / "python"), "-m", "accelbench.local.tiny_model", str(out)],
            check=True,
            capture_output=True,
            env=os.environ | {"PYTHONPATH": str(REPO / "plugins")},
        )
    return out


@contextlib.contextmanager
def zero_server(
    ttft_ms: float = 0.0,
    itl_ms: float = 0.0,
    degrade_after: int | None = None,
    degrade_slope: float = 1.0,
    degrade_above_rate: float | None = None,
) -> Iterator[tuple[str, int]]:
    """(base URL, pid) of a zero-work server pinned to SERVER_CPU. With `degrade_after=N`, every delay
    grows by `degrade_slope` x its own length per request streaming beyond N; with `degrade_above_rate=R`,
    by `degrade_slope` x its length while requests arrive faster than R req/s (zero_server.py's doc)."""
    port = free_port()
    degrade = [] if degrade_after is None else ["--degrade-after", str(degrade_after)]
    if degrade_above_rate is not None:
        degrade += ["--degrade-above-rate", str(degrade_above_rate)]
    proc = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "benchmarks" / "zero_server.py"),
            "--port",
            str(port),
            "--ttft-ms",
            str(ttft_ms),
            "--itl-ms",
            str(itl_ms),
            "--cpu",
            str(SERVER_CPU),
            *degrade,
            "--degrade-slope",
            str(degrade_slope),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
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


def spec(load: LoadPlan, campaign: str) -> BenchmarkSpec:
    return BenchmarkSpec(server=server_spec(tiny_tokenizer()), load=load, campaign_id=campaign)


def run_pipeline(bench: BenchmarkSpec, url: str, server_pid: int, work: Path) -> tuple[Lake, Envelope]:
    """Driver (client pinned to CLIENT_CPU) -> raw -> ingest into a fresh local lake; (lake, envelope)."""
    driver = Driver(
        bench, url, work / "raw", vllm=str(VLLM_BIN), server_pid=server_pid, client_cpus={CLIENT_CPU}
    )
    envelope = driver.run()
    lake = Lake(str(work / "lake"))
    where = RawLocation("cpu", "2026-12-01", bench.campaign_id, bench.spec_id)
    upload_raw(lake, driver.spec_dir, where)
    ingest_raw(lake, where, "benchmark")
    return lake, envelope
