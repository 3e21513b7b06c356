"""Task body of the pricing DAG: the Pricing API and spot history, or the offline snapshot."""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from accelbench.airflow.connections import aws_session
from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.aws.clients import check_region
from accelbench.catalog import queries
from accelbench.catalog.price_refresh import refresh_offline, refresh_online
from accelbench.config import Settings

log = logging.getLogger(__name__)


@fail_on_library_error
def refresh_prices(regions: list[str], instance_types: list[str], offline: bool | None) -> dict[str, Any]:
    settings = Settings.from_env()
    regions = regions or list(settings.regions)
    for region in regions:
        check_region(region, "regions")
    with catalog_engine(settings) as engine:
        specs = queries.instance_specs(engine, instance_types or None)
        if not specs:
            raise AirflowFailException("the instance catalog is empty: run accelbench_instance_catalog first")
        session = None if offline else aws_session(settings)
        if session is None:
            if offline is False:
                raise AirflowFailException("offline=false but no AWS credentials were found")
            report = refresh_offline(engine, specs, regions)
        else:
            report = refresh_online(
                engine,
                session,
                specs,
                regions,
                pricing_region=settings.pricing_endpoint_region,
                max_attempts=settings.aws_max_attempts,
            )
    log.info("pricing refresh done: %s", report.summary())
    if not report.priced:
        raise AirflowFailException(f"priced nothing: {report.summary()}")
    return report.to_dict()
