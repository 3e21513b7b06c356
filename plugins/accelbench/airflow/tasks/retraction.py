"""Task body of the retraction DAG: every id must be a run in the lake; the catalog records why."""

from __future__ import annotations

import logging
from typing import Any

from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.catalog.retract import check_run_ids, retract
from accelbench.config import Settings
from accelbench.lake.store import Lake

log = logging.getLogger(__name__)


@fail_on_library_error
def retract_runs(params: dict[str, Any], user: str | None) -> dict[str, Any]:
    settings = Settings.from_env()
    lake = Lake.from_env(settings)
    known = set(lake.read("runs", columns=["run_id"]).column("run_id").to_pylist())
    superseded_by = (params.get("superseded_by") or "").strip() or None
    ids = check_run_ids(params["run_ids"], superseded_by, known)
    with catalog_engine(settings) as engine:
        result = retract(engine, ids, params["reason"], superseded_by, by=user)
    for run_id in result.added:
        log.info("retracted %s: %s", run_id, params["reason"])
    for run_id, before in result.changed.items():
        log.info("retraction of %s updated (was: %s)", run_id, before)
    log.info(
        "retractions: %d added, %d updated, %d already so; the runs stay in the lake",
        len(result.added),
        len(result.changed),
        len(result.unchanged),
    )
    return {"added": result.added, "changed": sorted(result.changed), "unchanged": result.unchanged}
