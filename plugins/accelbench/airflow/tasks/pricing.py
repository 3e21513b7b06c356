"""Task body of the pricing DAG: the Pricing API and spot history, or the offline snapshot
(accelbench.catalog.price_refresh)."""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from accelbench.airflow.connections import aws_session
from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.catalog import price_refresh
from accelbench.config import Settings


@fail_on_library_error
def refresh_prices(regions: list[str], instance_types: list[str], offline: bool | None) -> dict[str, Any]:
    settings = Settings.from_env()
    done = price_refresh.refresh_prices(
        lambda: catalog_engine(settings),
        settings,
        regions,
        instance_types,
        offline,
        lambda: aws_session(settings),
    )
    if done.failure is not None:
        raise AirflowFailException(done.failure)
    return done.xcom()
