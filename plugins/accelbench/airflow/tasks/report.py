"""Task body of the cross-tier report DAG: read the lake and the catalog, build, write, log
(accelbench.report.cross_tier)."""

from __future__ import annotations

from typing import Any

from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.report import cross_tier


@fail_on_library_error
def cross_tier_report(params: dict[str, Any]) -> dict[str, Any]:
    return cross_tier.cross_tier_report(params, catalog_engine).xcom()
