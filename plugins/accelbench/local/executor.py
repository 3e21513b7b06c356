"""The local executor: one `vllm serve` child process per server group (its workloads in turn), the driver
in-process, raw to the lake."""

from __future__ import annotations

import json
import logging
import shutil
import socket
from datetime import UTC, datetime
from pathlib import Path

from accelbench.config import Settings
from accelbench.core.evidence import Envelope, GroupSummary, RunSummary
from accelbench.core.modes import ExecutionMode
from accelbench.core.server_group import ServerGroup
from accelbench.core.spec import BenchmarkSpec
from accelbench.core.startup_phases import STARTUP_FILE
from accelbench.errors import ConfigError
from accelbench.lake.raw import RawLocation, complete_run
from accelbench.lake.store import Lake, safe_name
from accelbench.loadgen.bench_client import pooled
from accelbench.loadgen.contract import DEV_MODE_ENV
from accelbench.loadgen.driver import Driver
from accelbench.loadgen.earlier import earlier_search_spreads
from accelbench.loadgen.finish import finish
from accelbench.loadgen.host import host_facts
from accelbench.loadgen.quality_step import measure_quality
from accelbench.loadgen.workload_group import run_workloads
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
    group: ServerGroup,
    lake: Lake,
    date: str,
    attempt: str | None = None,
    settings: Settings | None = None,
) -> GroupSummary:
    """Start the group's server once, drive each workload's levels on it in turn (its prefix cache emptied
    between them), stop the server, copy each workload's evidence to the lake's raw/ area as it ends.

    A workload an earlier attempt left complete in the lake is not measured again (its summary is that
    attempt's). A server that dies fails the workload it was serving (the driver says how: exit code, log
    tail) and those it had left (`GroupSummary.stopped`); the workloads it finished keep their evidence.
    Raises ServerStartError when the server never became healthy: there is no evidence to keep."""
    settings = settings or Settings.from_env()
    first = group.specs[0]
    campaign_dir = campaign_workdir(settings, first.campaign_id)
    work = campaign_dir / group.group_id
    earlier = {s.spec_id: found for s in group.specs if (found := complete_run(lake, s, date)) is not None}
    todo = [s for s in group.specs if s.spec_id not in earlier]
    for spec_id, summary in earlier.items():
        log.info("%s: measured complete by attempt %s, not measured again", spec_id, summary.attempt)
    if not todo:
        return GroupSummary(runs=[earlier[s.spec_id] for s in group.specs])
    pinning = Pinning.from_env()
    python = vllm_python(group.server.runtime)
    check_local_devices(first)
    journal = campaign_dir / SERVER_STARTS
    # The load generator is the CPU environment's `vllm bench serve` on every tier: one pinned client, so
    # that tiers differ only in the server.
    vllm, client_cpus = str(vllm_python().parent / "vllm"), pinning.client if pinning else None
    # Several workloads: vLLM's development API, for its prefix-cache reset between them.
    env = DEV_MODE_ENV if len(todo) > 1 else {}
    # The bench client imports vLLM (seconds) while the server starts, not after; an earlier benchmark of
    # this process (`airflow dags test` runs them one after another) leaves its runner warm for this one.
    with (
        pooled(vllm, client_cpus) as client,
        LocalServer(
            group.server, work / "server", pinning=pinning, python=python, journal=journal, extra_env=env
        ) as server,
    ):

        def driver_for(spec: BenchmarkSpec, recheck: bool) -> Driver:
            return Driver(
                spec,
                server.url,
                work / "raw",
                vllm=vllm,
                server_pid=server.server_pid,
                client_cpus=client_cpus,
                attempt=attempt,
                client=client,
                server_exit=server.exit_status,  # a level whose server died says how: exit code, log tail
                earlier_spreads=earlier_search_spreads(lake, spec, "local"),
                recheck=recheck,
            )

        def quality(spec: BenchmarkSpec, driver: Driver, envelope: Envelope) -> None:
            if spec.quality is not None and server.exit_status() is None:  # after the levels, on their server
                measure_quality(spec, server.url, driver.spec_dir, lm_eval_python(settings))

        def land(spec: BenchmarkSpec, driver: Driver, envelope: Envelope, first: bool) -> RunSummary:
            spec_dirs.setdefault(spec.spec_id, driver.spec_dir)
            landed = finish(
                envelope,
                driver.spec_dir,
                lake,
                date,
                execution_mode="local",
                node=socket.gethostname(),
                pinning=json.dumps(pinning.describe()) if pinning else None,
                server_startup_s=server.startup_s if first else None,  # the group's server started once
                server_group=group.group_id,
                **host_facts(),
                # No image ran: the rows' `image` stays the plan, this says what was measured instead.
                server_image_id=f"vllm=={local_vllm_version(python)} local process (no image)",
                server_quantization=server.reported_quantization(),
            )
            landed.server_startup_s = server.startup_s
            return landed

        spec_dirs: dict[str, Path] = {}
        ran = run_workloads(todo, server.url, driver_for, land, quality, server.exit_status)
    if server.startup is not None and todo[0].spec_id in spec_dirs:  # the first workload's rows carry it
        stopped_at = server.startup.model_copy(update={"ended_at": datetime.now(UTC).isoformat()})
        _put_startup(lake, todo[0], date, spec_dirs[todo[0].spec_id], stopped_at.model_dump_json())
    # The compile caches are not evidence, and not worth keeping per campaign.
    shutil.rmtree(work / "server" / "cache", ignore_errors=True)
    measured = {r.spec_id: r for r in ran.runs}
    runs = [r for s in group.specs if (r := earlier.get(s.spec_id) or measured.get(s.spec_id)) is not None]
    return GroupSummary(runs=runs, stopped=ran.stopped)


def _put_startup(lake: Lake, spec: BenchmarkSpec, date: str, spec_dir: Path, text: str) -> None:
    """The server's start-up phases beside its first workload's envelope (kept locally, and in the lake's raw
    area, which its evidence already reached): the ingest makes it the `startups` row."""
    (spec_dir / STARTUP_FILE).write_text(text)
    where = RawLocation(spec.server.accelerator_type, date, spec.campaign_id, spec.spec_id)
    try:
        lake.put_raw_text(text, *where.parts[1:], STARTUP_FILE)
    except Exception as exc:  # the evidence stays in the work folder, as finish() keeps it
        log.error("could not copy the server's start-up to %s: %s: %s", lake.uri, type(exc).__name__, exc)


class LocalExecutor:
    """`local` mode behind the Executor protocol: run_local into one lake."""

    mode: ExecutionMode = "local"

    def __init__(self, lake: Lake, settings: Settings | None = None) -> None:
        self.lake, self.settings = lake, settings

    def run(self, group: ServerGroup, date: str, attempt: str) -> GroupSummary:
        return run_local(group, self.lake, date, attempt, self.settings)

    def on_kill(self) -> None:
        """Nothing to do: the server is a child of the task's process and dies with it."""
