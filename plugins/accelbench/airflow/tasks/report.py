"""Task body of the cross-tier report DAG: read the lake and the catalog, build, write, log
(accelbench.report.service)."""

from __future__ import annotations

from typing import Any

from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.report import service


@fail_on_library_error
def cross_tier_report(params: dict[str, Any]) -> dict[str, Any]:
    return service.cross_tier_report(params, catalog_engine).xcom()
