"""Seed the instance catalog from the shipped data file and verify it against EC2 when AWS is reachable."""

from __future__ import annotations

import os

import pendulum
from accelbench.airflow.assets import CATALOG_ASSET
from airflow.sdk import Param, dag, task

DEFAULT_REGION = os.environ.get("ACCELBENCH_REGIONS", "us-east-1").split(",")[0].strip()


@dag(
    dag_id="accelbench_instance_catalog",
    schedule="@weekly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["accelbench", "catalog"],
    doc_md=__doc__,
    params={
        "verify_region": Param(
            DEFAULT_REGION,
            type="string",
            pattern=r"^[a-z]{2}(-[a-z]+)+-\d+$",
            description="Region whose EC2 DescribeInstanceTypes checks the rows",
        ),
    },
)
def accelbench_instance_catalog() -> None:
    @task
    def migrate() -> str:
        from accelbench.airflow.tasks import migrate_catalog

        return migrate_catalog()

    @task(outlets=[CATALOG_ASSET])
    def seed() -> dict:
        from accelbench.airflow.tasks import seed_catalog

        return seed_catalog()

    @task
    def verify(params: dict | None = None) -> dict:
        from accelbench.airflow.tasks import verify_catalog

        return verify_catalog(params["verify_region"])

    migrate() >> seed() >> verify()


accelbench_instance_catalog()
