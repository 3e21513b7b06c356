"""The Airflow plugin: a "Benchmarks" entry in the UI's navigation showing the report view.

Registered through the `airflow.plugins` entry point. Every Airflow component loads plugins, so this
module stays light: the view's FastAPI app (and the lake, pyarrow, jinja) load on its first request.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from accelbench.airflow.deadline import CampaignEstimate

URL_PREFIX = "/accelbench"


class _AppOnFirstRequest:
    """An ASGI app that builds the real one when the API server first routes a request to it."""

    def __init__(self) -> None:
        self._app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._app is None:
            from accelbench.airflow.benchmarks_view import create_app

            self._app = create_app()
        await self._app(scope, receive, send)

    def __repr__(self) -> str:
        return "accelbench.airflow.benchmarks_view:create_app"


class AccelbenchPlugin(AirflowPlugin):
    name = "accelbench"
    # AirflowPlugin declares these without ClassVar (mypy: misc), ruff wants it on a mutable default
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [  # type: ignore[misc]
        {"app": _AppOnFirstRequest(), "url_prefix": URL_PREFIX, "name": "accelbench benchmarks"}
    ]
    # The campaign run's deadline reference: the scheduler evaluates it when it creates a run.
    deadline_references: ClassVar[list[type]] = [CampaignEstimate]  # type: ignore[misc]
    external_views: ClassVar[list[dict[str, Any]]] = [  # type: ignore[misc]
        {
            "name": "Benchmarks",
            "href": URL_PREFIX.lstrip("/") + "/",  # relative: works behind a proxy's path prefix
            "destination": "nav",
            "url_route": "benchmarks",
        }
    ]
