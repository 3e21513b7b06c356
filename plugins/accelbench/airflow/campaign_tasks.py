"""Task bodies of the campaign DAG in local mode: run one spec, publish it, summarise, watch."""

from __future__ import annotations

import json
import logging
import shutil
import socket
from typing import Any

import pyarrow.dataset as ds
from airflow.sdk.exceptions import AirflowFailException

from accelbench.campaign.spec import BenchmarkSpec
from accelbench.config import Settings
from accelbench.errors import AccelbenchError
from accelbench.execution.local_server import LocalServer, Pinning, vllm_python
from accelbench.lake.ingest import Provenance, publish
from accelbench.lake.store import Lake, safe_name
from accelbench.loadgen.driver import Driver, summary

log = logging.getLogger(__name__)


def campaign_id(dag_id: str, run_id: str) -> str:
    """Stable for a DAG run: a retried or cleared task writes the same lake files."""
    return safe_name(f"{dag_id}.{run_id}")


def run_local(spec_json: dict[str, Any], dag_run_id: str, date: str) -> dict[str, Any]:
    """Start the server, drive every level, publish to the lake (also after a failed level), stop."""
    spec = BenchmarkSpec.model_validate(spec_json)
    settings = Settings.from_env()
    work = settings.home / "work" / spec.campaign_id / spec.spec_id
    pinning = Pinning.from_env()
    lake = Lake.from_env(settings)
    try:
        python = vllm_python()
        with LocalServer(spec.server, work / "server", pinning=pinning, python=python) as server:
            driver = Driver(
                spec,
                server.url,
                work / "raw",
                vllm=str(python.parent / "vllm"),
                server_pid=server.process.pid if server.process else None,
                client_cpus=pinning.client if pinning else None,
            )
            envelope = driver.run()
            startup_s = server.startup_s
    except AccelbenchError as exc:
        raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc
    prov = Provenance(
        dag_run_id=dag_run_id,
        execution_mode="local",
        pinning=json.dumps(pinning.describe()) if pinning else None,
        node=socket.gethostname(),
    )
    data = publish(lake, driver.spec_dir, prov, date)
    # The raw files are in the lake now; the compile caches are not worth keeping per campaign.
    shutil.rmtree(work / "server" / "cache", ignore_errors=True)
    result = summary(envelope) | {
        "server_startup_s": startup_s,
        "runs_rows": data.runs.num_rows,
        "requests_rows": data.requests.num_rows,
        "lake": lake.uri,
    }
    log.info(
        "published %d runs rows and %d requests rows to %s",
        data.runs.num_rows,
        data.requests.num_rows,
        lake.uri,
    )
    if envelope["failure"]:
        raise AirflowFailException(
            f"benchmark {spec.spec_id} failed at {envelope['failure']}; the levels "
            "measured before it are in the lake"
        )
    return result


def summarize(campaign: str, date: str) -> dict[str, Any]:
    """Log one line per run of this campaign, read back from its date partition of the lake."""
    lake = Lake.from_env()
    where = (ds.field("date") == date) & (ds.field("campaign_id") == campaign)
    mine = sorted(lake.read("runs", where).to_pylist(), key=lambda r: r["run_id"])
    header = f"{'run':<46}{'status':<8}{'req/s':>8}{'out tok/s':>11}{'TTFT p50 ms':>13}{'TPOT p50 ms':>13}"
    lines = [header]
    for r in mine:
        lines.append(
            f"{r['run_id'].split('/', 1)[-1]:<46}{r['status']:<8}{r['request_throughput'] or 0:>8.2f}"
            f"{r['output_throughput'] or 0:>11.1f}{r['p50_ttft_ms'] or 0:>13.1f}"
            f"{r['p50_tpot_ms'] or 0:>13.2f}"
        )
    log.info("campaign %s, lake %s:\n%s", campaign, lake.uri, "\n".join(lines))
    return {
        "campaign_id": campaign,
        "runs": len(mine),
        "ok": sum(r["status"] == "ok" for r in mine),
        "lake": lake.uri,
    }
