"""Task body of the import DAG: check the params against the catalog, ingest, say what was refused
(accelbench.landing.imported)."""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.config import Settings
from accelbench.landing import imported

log = logging.getLogger(__name__)


@fail_on_library_error
def import_bench_results(params: dict[str, Any], dag_run_id: str) -> dict[str, Any]:
    settings = Settings.from_env()
    report = imported.import_bench_results(params, dag_run_id, lambda: catalog_engine(settings), settings)
    if why := imported.nothing_imported(report):
        raise AirflowFailException(why)
    return {
        "imported": report.imported,
        "runs": report.runs,
        "requests": report.requests,
        "refused": report.refused,
    }


def fail_on_refused(result: dict[str, Any]) -> None:
    """The import task succeeded (its rows landed and schedule a report); a refused file still fails
    the DAG run, here, so it is seen."""
    refused = result.get("refused") or {}
    if refused:
        raise AirflowFailException(
            f"{len(refused)} of {len(refused) + len(result['imported'])} files refused "
            f"(the others are imported): " + "; ".join(refused.values())
        )
    log.info("every file imported")
