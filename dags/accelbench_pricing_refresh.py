"""Daily Graviton (and GPU/Neuron) price history: Pricing API and spot history, or the offline snapshot."""

from __future__ import annotations

import os

import pendulum
from accelbench.airflow.assets import CATALOG_ASSET, PRICES_ASSET
from airflow.sdk import Param, dag, task

DEFAULT_REGIONS = [
    r.strip() for r in os.environ.get("ACCELBENCH_REGIONS", "us-east-1").split(",") if r.strip()
]


@dag(
    dag_id="accelbench_pricing_refresh",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["accelbench", "pricing"],
    doc_md=__doc__,
    params={
        "regions": Param(
            DEFAULT_REGIONS,
            type="array",
            minItems=1,
            items={"type": "string", "pattern": r"^[a-z]{2}(-[a-z]+)+-\d+$"},
            description="Regions to price",
        ),
        "instance_types": Param(
            [],
            type="array",
            items={"type": "string", "pattern": r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$"},
            description="Instance types to price; empty = the whole catalog",
        ),
        "offline": Param(
            None,
            type=["null", "boolean"],
            description="true: the shipped snapshot; false: AWS only; empty: AWS when "
            "credentials exist, else the snapshot",
        ),
    },
)
def accelbench_pricing_refresh() -> None:
    @task(inlets=[CATALOG_ASSET], outlets=[PRICES_ASSET])
    def refresh(params: dict | None = None) -> dict:
        from accelbench.airflow.tasks import refresh_prices

        return refresh_prices(params["regions"], params["instance_types"], params["offline"])

    refresh()


accelbench_pricing_refresh()
