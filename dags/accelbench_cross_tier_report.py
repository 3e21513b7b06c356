"""Cross-tier report: every run in the lake joined with the catalog's prices at its date; medians
over repeats, cost per 1M output and total tokens (on-demand and spot), the best level under the
SLOs, the cross-tier comparison (like with like only: the same model on the same workload, measured
or imported, side by side; other workloads listed apart with what differs), the price-performance
frontier, version-over-version deltas against run-to-run noise.
Written as Parquet, CSV and one self-contained HTML page with plots under the lake's reports/
area (the Benchmarks view in the Airflow UI lists them). Runs when a campaign or an import lands
rows, and when runs are retracted.
"""

from __future__ import annotations

from typing import Any

from accelbench.airflow.assets import LAKE_ASSET, PRICES_ASSET, RETRACTIONS_ASSET
from accelbench.airflow.dag_defaults import DEFAULT_SLOS, VERSION_PATTERN, dag_kwargs, slos_schema
from accelbench.core.slos import DEFAULT_MAX_ERROR_RATE
from accelbench.tiers import names as tier_names
from airflow.sdk import Param, dag, task


@dag(
    dag_id="accelbench_cross_tier_report",
    schedule=LAKE_ASSET | RETRACTIONS_ASSET,
    doc_md=__doc__,
    params={
        "models": Param(
            [], type="array", items={"type": "string", "maxLength": 200}, description="empty = all"
        ),
        "tiers": Param(
            [], type="array", uniqueItems=True, items={"type": "string", "enum": list(tier_names())}
        ),
        "versions": Param([], type="array", items={"type": "string", "pattern": VERSION_PATTERN}),
        "date_from": Param(None, type=["null", "string"], format="date"),
        "date_to": Param(None, type=["null", "string"], format="date"),
        "region": Param(
            None, type=["null", "string"], description="price region; empty = ACCELBENCH_REGIONS' first"
        ),
        "slos": Param(dict(DEFAULT_SLOS), **slos_schema("ttft_p99_ms", "tpot_p99_ms", "e2el_p99_ms")),
        "max_error_rate": Param(
            DEFAULT_MAX_ERROR_RATE,
            type=["null", "number"],
            minimum=0,
            maximum=1,
            description="a level with a larger share of failed requests misses the SLOs; empty = no limit",
        ),
    },
    **dag_kwargs("report"),
)
def accelbench_cross_tier_report() -> None:
    @task(inlets=[LAKE_ASSET, PRICES_ASSET])
    def report(params: dict | None = None, **context: Any) -> dict:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.report import cross_tier_report

        return cross_tier_report(dict(params), context)

    report()


accelbench_cross_tier_report()
