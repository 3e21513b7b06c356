"""Seed the instance catalog from the shipped data file; verify it against EC2 when AWS is reachable."""

from __future__ import annotations

from accelbench.airflow.assets import CATALOG_ASSET
from accelbench.airflow.dag_defaults import REGION_PATTERN, dag_kwargs, default_regions, timed
from airflow.sdk import Param, dag, task


@dag(
    dag_id="accelbench_instance_catalog",
    schedule=timed("@weekly"),
    doc_md=__doc__,
    params={
        "verify_region": Param(
            default_regions()[0],
            type="string",
            pattern=REGION_PATTERN,
            description="Region whose EC2 DescribeInstanceTypes checks the rows",
        ),
    },
    **dag_kwargs("catalog"),
)
def accelbench_instance_catalog() -> None:
    @task
    def migrate() -> str:
        from accelbench.airflow.tasks.catalog import migrate_catalog

        return migrate_catalog()

    @task(outlets=[CATALOG_ASSET])
    def seed() -> dict:
        from accelbench.airflow.tasks.catalog import seed_catalog

        return seed_catalog()

    @task
    def verify(params: dict | None = None) -> dict:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.catalog import verify_catalog

        return verify_catalog(params["verify_region"])

    migrate() >> seed() >> verify()


accelbench_instance_catalog()
