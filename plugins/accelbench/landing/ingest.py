"""One spec's raw evidence of this attempt into the lake's tables (`accelbench.lake.ingest.ingest_raw`),
as the campaign DAG's ingest task calls it: what landed, or why nothing did."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from accelbench.core.evidence import GroupSummary
from accelbench.core.server_group import ServerGroup
from accelbench.core.spec import BenchmarkSpec
from accelbench.errors import AccelbenchError
from accelbench.lake.ingest import StaleEvidence, ingest_raw
from accelbench.lake.raw import RawLocation
from accelbench.lake.store import Lake
from accelbench.landing.capacity import capacity_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ingested:
    """The rows one spec landed; or why none did: `skip` (no evidence of this attempt: the benchmark's log
    says why) or `failure` (the evidence was refused), with the error that said so (`cause`)."""

    spec_id: str
    runs_rows: int = 0
    ok: int = 0
    requests_rows: int = 0
    skip: str | None = None
    failure: str | None = None
    cause: Exception | None = None

    def xcom(self) -> dict[str, Any]:
        """What the ingest task returns."""
        return {
            "spec_id": self.spec_id,
            "runs_rows": self.runs_rows,
            "ok": self.ok,
            "requests_rows": self.requests_rows,
        }


def ingest_spec(
    lake: Lake, spec: BenchmarkSpec, dag_run_id: str, date: str, attempt: str | None, hints: dict[str, Any]
) -> Ingested:
    """The raw evidence `attempt` of the spec's benchmark left (also after a failed level) -> Parquet.

    Without an attempt, or when the raw folder holds another attempt's files, this spec's table files are
    removed (an earlier attempt's rows must not pass for this run's) and the outcome says why (`skip`)."""
    where = RawLocation(spec.server.accelerator_type, date, spec.campaign_id, spec.spec_id)
    raw_uri = lake.uri_of(lake.path(*where.parts))
    try:
        data = ingest_raw(lake, where, dag_run_id, attempt, **hints) if attempt else None
    except StaleEvidence as exc:
        _forget(lake, where)
        return Ingested(spec.spec_id, skip=f"{exc}; the benchmark's log says why", cause=exc)
    except AccelbenchError as exc:
        return Ingested(spec.spec_id, failure=f"{type(exc).__name__}: {exc}", cause=exc)
    if data is None:
        _forget(lake, where)
        why = (
            f"no raw evidence for {spec.spec_id} from this attempt at {raw_uri}: the benchmark produced "
            "none (its log says why)"
        )
        return Ingested(spec.spec_id, skip=why)
    ok = sum(s == "ok" for s in data.runs["status"].to_pylist())
    log.info(
        "%s: %d runs rows (%d ok) and %d requests rows into %s, from %s",
        spec.spec_id,
        data.runs.num_rows,
        ok,
        data.request_rows,
        lake.uri,
        raw_uri,
    )
    for c in data.capacities.to_pylist():
        log.info("%s: load search %s, %s", spec.spec_id, c["outcome"], capacity_text(c))
    return Ingested(spec.spec_id, data.runs.num_rows, ok, data.request_rows)


def _forget(lake: Lake, where: RawLocation) -> None:
    for path in lake.remove_tables(where.accelerator_type, where.date, where.stem):
        log.warning("removed %s: rows of an earlier attempt, not of this one", lake.uri_of(path))


@dataclass(frozen=True)
class GroupIngested:
    """What one server's workloads landed (`ingest_group`): each spec's outcome, and the group's: `failure`
    (a spec's evidence was refused), else `skip` (no spec landed anything), with the error that said so."""

    specs: list[Ingested]
    failure: str | None = None
    skip: str | None = None
    cause: Exception | None = None

    def xcom(self) -> list[dict[str, Any]]:
        """What the ingest task returns: the specs that landed."""
        return [one.xcom() for one in self.specs if one.skip is None]


def ingest_group(
    lake: Lake,
    group: ServerGroup,
    dag_run_id: str,
    date: str,
    result: GroupSummary,
    hints: dict[str, Any],
) -> GroupIngested:
    """Each workload of one server -> Parquet, each spec's rows apart (also after a failed level, and the
    workloads a server finished before it died), each from the attempt its run summary in `result` names (a
    spec without one has its table files removed: `ingest_spec`). The server-death hints reach the failed
    level's row only (lake.ingest): the workload the server was serving when it died."""
    found = []
    for spec in group.specs:
        run = result.of(spec.spec_id)
        found.append(ingest_spec(lake, spec, dag_run_id, date, run.attempt if run else None, hints))
    for one in found:
        if one.skip is not None:
            log.warning("%s: %s", one.spec_id, one.skip)
    if failed := [f for f in found if f.failure is not None]:
        why = "; ".join(f"{f.spec_id}: {f.failure}" for f in failed)
        return GroupIngested(found, failure=why, cause=failed[0].cause)
    if all(f.skip is not None for f in found):
        why = "; ".join(f"{f.spec_id}: {f.skip}" for f in found)
        return GroupIngested(found, skip=why, cause=found[0].cause)
    return GroupIngested(found)
