"""The "Benchmarks" view: a small FastAPI app the Airflow API server mounts at /accelbench.

It lists the reports in the lake and serves each one's HTML and tables. Every route needs an Airflow
user allowed to read the report DAG (the same check the REST API makes for that DAG), so the view
shows no more than the DAG's own pages would.
"""

from __future__ import annotations

from airflow.api_fastapi.core_api.security import requires_access_dag
from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import HTMLResponse, Response

from accelbench.lake.store import Lake
from accelbench.report.build import HTML_NAME
from accelbench.report.listing import NoSuchReport, list_reports, report_file
from accelbench.report.pages import environment
from accelbench.report.tables import TABLES

REPORT_DAG_ID = "accelbench_cross_tier_report"
_MEDIA = {"html": "text/html; charset=utf-8", "csv": "text/csv; charset=utf-8", "json": "application/json"}
_BACK = '<nav style="margin-bottom:1rem"><a href="../">&larr; All reports</a></nav>'


def create_app() -> FastAPI:
    app = FastAPI(
        title="accelbench benchmarks",
        dependencies=[Depends(requires_access_dag("GET", param_dag_id=REPORT_DAG_ID))],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:  # sync: the lake is read in FastAPI's thread pool, not on the event loop
        lake = Lake.from_env()
        return (
            environment()
            .get_template("index.html.j2")
            .render(reports=list_reports(lake), lake=lake.uri, tables=TABLES)
        )

    @app.get("/reports/{report_id}", response_class=HTMLResponse)
    def report(report_id: str) -> str:
        html = _file(report_id, HTML_NAME).decode()
        return html.replace("<body>", f"<body>\n{_BACK}", 1)

    @app.get("/reports/{report_id}/figures/{name}")
    def figure(report_id: str, name: str) -> Response:
        return Response(_file(report_id, f"figures/{name}"), media_type="image/svg+xml")

    @app.get("/reports/{report_id}/{name}")
    def download(report_id: str, name: str) -> Response:
        media = _MEDIA.get(name.rsplit(".", 1)[-1], "application/octet-stream")
        return Response(_file(report_id, name), media_type=media)

    return app


def _file(report_id: str, name: str) -> bytes:
    try:
        return report_file(Lake.from_env(), report_id, name)
    except NoSuchReport:
        raise HTTPException(status_code=404, detail=f"no report file {report_id}/{name}") from None
