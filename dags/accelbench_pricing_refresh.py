"""Daily price history: Pricing API and spot history, or the offline snapshot with no AWS."""

from __future__ import annotations

from accelbench.airflow.assets import CATALOG_ASSET, PRICES_ASSET
from accelbench.airflow.dag_defaults import (
    INSTANCE_TYPE_PATTERN,
    REGION_PATTERN,
    dag_kwargs,
    default_regions,
    timed,
)
from airflow.sdk import Param, dag, task


@dag(
    dag_id="accelbench_pricing_refresh",
    schedule=timed("@daily"),
    doc_md=__doc__,
    params={
        "regions": Param(
            default_regions(),
            type="array",
            minItems=1,
            items={"type": "string", "pattern": REGION_PATTERN},
            description="Regions to price",
        ),
        "instance_types": Param(
            [],
            type="array",
            items={"type": "string", "pattern": INSTANCE_TYPE_PATTERN},
            description="Instance types to price; empty = the whole catalog",
        ),
        "offline": Param(
            None,
            type=["null", "boolean"],
            description="true: the shipped snapshot; false: AWS only; "
            "empty: AWS when credentials exist, else the snapshot",
        ),
    },
    **dag_kwargs("pricing"),
)
def accelbench_pricing_refresh() -> None:
    @task(inlets=[CATALOG_ASSET], outlets=[PRICES_ASSET])
    def refresh(params: dict | None = None) -> dict:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.pricing import refresh_prices

        return refresh_prices(params["regions"], params["instance_types"], params["offline"])

    refresh()


accelbench_pricing_refresh()
