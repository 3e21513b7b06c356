"""The `startups` row of a server: its start-up in phases (accelbench.core.startup_phases's startup.json,
beside the envelope in the raw area), with the configuration as its `runs` rows name it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pyarrow as pa
from pydantic import ValidationError

from accelbench.core.evidence import Envelope
from accelbench.core.startup_phases import FIGURES, PHASES, STARTUP_FILE, Startup
from accelbench.lake.raw import RawEvidenceError, Reader
from accelbench.lake.rows import startups_table
from accelbench.lake.schemas import SCHEMA_VERSION, STARTUPS

# What the ingest's provenance says of where the server ran (accelbench.lake.ingest.Provenance's fields).
PROVENANCE_COLUMNS = (
    "dag_run_id",
    "execution_mode",
    "node",
    "capacity_type",
    "host_cpu_model",
    "host_instance_type",
    "source_uri",
    "server_group",
)


def read_startup(read: Reader, where: str) -> Startup | None:
    """The raw folder's startup.json (None: the server never became ready, or evidence from before it)."""
    doc = read(STARTUP_FILE)
    if doc is None:
        return None
    try:
        return Startup.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise RawEvidenceError(f"{where}/{STARTUP_FILE}: {problems}") from None


def startup_row(
    envelope: Envelope, startup: Startup, prov: Mapping[str, Any], model: Mapping[str, str | None]
) -> dict[str, Any]:
    server = envelope.spec.server
    version = envelope.server.get("version")
    started = datetime.fromisoformat(startup.started_at)
    first_level = None
    if envelope.started_at is not None:
        since_start = datetime.fromisoformat(envelope.started_at) - started
        first_level = since_start.total_seconds() - startup.ready_s
    return {
        "schema_version": SCHEMA_VERSION,
        "campaign_id": envelope.spec.campaign_id,
        "spec_id": envelope.spec_id,
        "matrix_key": envelope.spec.matrix_key,
        "instance_type": server.instance_type,
        "accelerator_count": server.accelerator_count,
        "model": model["model"],
        "quantization": server.quantization,
        "vllm_version": version.get("version") if isinstance(version, dict) else None,
        **{k: prov[k] for k in PROVENANCE_COLUMNS},
        "nodeclaim": startup.nodeclaim,
        "started_at": started,
        "ready_s": startup.ready_s,
        **{name: startup.phases.get(name) for name in PHASES},
        **{name: startup.figures.get(name) for name in FIGURES},
        "first_level_s": round(first_level, 3) if first_level is not None else None,
        "method": startup.method,
        "ended_at": datetime.fromisoformat(startup.ended_at) if startup.ended_at else None,
        "billed_s": startup.billed_s(),
    }


def startups(
    envelope: Envelope, startup: Startup | None, prov: Mapping[str, Any], model: Mapping[str, str | None]
) -> pa.Table:
    """The server's `startups` table: one row, or none when it left no startup.json."""
    if startup is None:
        return STARTUPS.empty_table()
    return startups_table([startup_row(envelope, startup, prov, model)])
