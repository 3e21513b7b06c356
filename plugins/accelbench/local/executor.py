"""The local executor: one `vllm serve` child process per spec, the driver in-process, raw to the lake."""

from __future__ import annotations

import json
import logging
import shutil
import socket
from datetime import UTC, datetime
from pathlib import Path

from accelbench.config import Settings
from accelbench.core.evidence import RunSummary
from accelbench.core.modes import ExecutionMode
from accelbench.core.spec import BenchmarkSpec
from accelbench.core.startup_phases import STARTUP_FILE
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake, safe_name
from accelbench.loadgen.bench_client import pooled
from accelbench.loadgen.driver import Driver
from accelbench.loadgen.earlier import earlier_search_spreads
from accelbench.loadgen.finish import finish
from accelbench.loadgen.host import host_facts
from accelbench.loadgen.quality_step import measure_quality
from accelbench.local.quantized_model import QuantizationError, quant_python
from accelbench.local.server import LocalServer, Pinning, local_vllm_version, vllm_python
from accelbench.tiers import tier

log = logging.getLogger(__name__)
SERVER_STARTS = "server-starts.jsonl"


def campaign_workdir(settings: Settings, campaign_id: str) -> Path:
    return settings.library.home / "work" / safe_name(campaign_id)


def check_local_devices(spec: BenchmarkSpec) -> None:
    """A spec runs locally on this worker's own devices: its tier says whether there are enough of them
    (a GPU spec: a GPU per tensor-parallel rank)."""
    if problem := tier(spec.server.accelerator_type).local_spec_problem(spec.server):
        raise ConfigError(*problem)


def lm_eval_python(settings: Settings) -> Path | None:
    """The interpreter with lm-eval: the setting, else the quantization environment (None: there is none,
    which the quality step records)."""
    if settings.loadgen.lm_eval_python is not None:
        return settings.loadgen.lm_eval_python
    try:
        return quant_python()
    except QuantizationError:
        return None


def run_local(
    spec: BenchmarkSpec, lake: Lake, date: str, attempt: str | None = None, settings: Settings | None = None
) -> RunSummary:
    """Start the server, drive every level, stop the server, copy the evidence to the lake's raw/ area.

    Returns the run summary (`failure` set when a level failed; `lake_error` when the lake could not
    take the evidence, which then stays in the campaign's work folder); raises ServerStartError when
    the server never became healthy, in which case there is no evidence to keep.
    """
    settings = settings or Settings.from_env()
    campaign_dir = campaign_workdir(settings, spec.campaign_id)
    work = campaign_dir / spec.spec_id
    pinning = Pinning.from_env()
    python = vllm_python(spec.server.runtime)
    check_local_devices(spec)
    journal = campaign_dir / SERVER_STARTS
    # The load generator is the CPU environment's `vllm bench serve` on every tier: one pinned client, so
    # that tiers differ only in the server.
    vllm, client_cpus = str(vllm_python().parent / "vllm"), pinning.client if pinning else None
    # The bench client imports vLLM (seconds) while the server starts, not after; an earlier benchmark of
    # this process (`airflow dags test` runs them one after another) leaves its runner warm for this one.
    with (
        pooled(vllm, client_cpus) as client,
        LocalServer(spec.server, work / "server", pinning=pinning, python=python, journal=journal) as server,
    ):
        driver = Driver(
            spec,
            server.url,
            work / "raw",
            vllm=vllm,
            server_pid=server.process.pid if server.process else None,
            client_cpus=client_cpus,
            attempt=attempt,
            client=client,
            server_exit=server.exit_status,  # a level whose server died says how: exit code, log tail
            earlier_spreads=earlier_search_spreads(lake, spec, "local"),
        )
        envelope = driver.run()
        if spec.quality is not None and server.exit_status() is None:  # after the levels, on their server
            measure_quality(spec, server.url, driver.spec_dir, lm_eval_python(settings))
    if server.startup is not None:  # beside the envelope: the ingest makes it the `startups` row
        stopped = server.startup.model_copy(update={"ended_at": datetime.now(UTC).isoformat()})
        (driver.spec_dir / STARTUP_FILE).write_text(stopped.model_dump_json())
    result = finish(
        envelope,
        driver.spec_dir,
        lake,
        date,
        execution_mode="local",
        node=socket.gethostname(),
        pinning=json.dumps(pinning.describe()) if pinning else None,
        server_startup_s=server.startup_s,
        **host_facts(),
        # No image ran: the rows' `image` stays the plan, this says what was measured instead.
        server_image_id=f"vllm=={local_vllm_version(python)} local process (no image)",
        server_quantization=server.reported_quantization(),
    )
    # The compile caches are not evidence, and not worth keeping per campaign.
    shutil.rmtree(work / "server" / "cache", ignore_errors=True)
    result.server_startup_s = server.startup_s
    return result


class LocalExecutor:
    """`local` mode behind the Executor protocol: run_local into one lake."""

    mode: ExecutionMode = "local"

    def __init__(self, lake: Lake, settings: Settings | None = None) -> None:
        self.lake, self.settings = lake, settings

    def run(self, spec: BenchmarkSpec, date: str, attempt: str) -> RunSummary:
        return run_local(spec, self.lake, date, attempt, self.settings)

    def on_kill(self) -> None:
        """Nothing to do: the server is a child of the task's process and dies with it."""
