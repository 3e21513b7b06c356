"""The local executor: one `vllm serve` child process per spec, the driver in-process, raw to the lake."""

from __future__ import annotations

import json
import logging
import shutil
import socket
from pathlib import Path
from typing import Any

from accelbench.config import Settings
from accelbench.core.spec import BenchmarkSpec
from accelbench.execution.local_server import LocalServer, Pinning, local_vllm_version, vllm_python
from accelbench.lake.raw import RawLocation, upload_raw, write_execution
from accelbench.lake.store import Lake, safe_name
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver, summary
from accelbench.loadgen.host import host_facts

log = logging.getLogger(__name__)
SERVER_STARTS = "server-starts.jsonl"


def campaign_workdir(settings: Settings, campaign_id: str) -> Path:
    return settings.home / "work" / safe_name(campaign_id)


def run_local(
    spec: BenchmarkSpec, lake: Lake, date: str, attempt: str | None = None, settings: Settings | None = None
) -> dict[str, Any]:
    """Start the server, drive every level, copy the evidence to the lake's raw/ area, stop the server.

    Returns the driver's summary (with `failure` set when a level failed); raises ServerStartError
    when the server never became healthy, in which case there is no evidence to keep.
    """
    settings = settings or Settings.from_env()
    campaign_dir = campaign_workdir(settings, spec.campaign_id)
    work = campaign_dir / spec.spec_id
    pinning = Pinning.from_env()
    python = vllm_python()
    journal = campaign_dir / SERVER_STARTS
    vllm, client_cpus = str(python.parent / "vllm"), pinning.client if pinning else None
    # The bench client imports vLLM (seconds) while the server starts, not after.
    with (
        BenchClient(vllm, client_cpus) as client,
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
        )
        envelope = driver.run()
    write_execution(
        driver.spec_dir,
        execution_mode="local",
        node=socket.gethostname(),
        pinning=json.dumps(pinning.describe()) if pinning else None,
        server_startup_s=server.startup_s,
        **host_facts(),
        # No image ran: the rows' `image` stays the plan, this says what was measured instead.
        server_image_id=f"vllm=={local_vllm_version(python)} local process (no image)",
    )
    where = RawLocation(spec.server.accelerator_type, date, spec.campaign_id, spec.spec_id)
    paths = upload_raw(lake, driver.spec_dir, where)
    log.info("raw evidence: %d files under %s", len(paths), lake.uri_of(lake.path(*where.parts)))
    # The evidence is in the lake now; the compile caches are not worth keeping per campaign.
    shutil.rmtree(work / "server" / "cache", ignore_errors=True)
    return summary(envelope) | {"server_startup_s": server.startup_s}
