"""Task body of the cross-tier report DAG: read the lake and the catalog, build, write, log
(accelbench.report.service); announce a changed answer (accelbench.airflow.notify)."""

from __future__ import annotations

from typing import Any

from accelbench.airflow.notify import announce, report_link
from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.report import service


@fail_on_library_error
def cross_tier_report(params: dict[str, Any], context: dict[str, Any] | None = None) -> dict[str, Any]:
    written = service.cross_tier_report(params, catalog_engine)
    if written.changes and context is not None:
        link = report_link(written.report_id, written.html)
        announce(f"accelbench report {written.report_id}: the answer changed", written.changes, link, context)
    return written.xcom()
