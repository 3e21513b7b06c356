"""Compact the lake: each partition (a tier's day) of a table that holds more than one file is rewritten
into one file, its inputs deleted only after the new file was read back and matched them (row count, each
numeric column's sum, the set of run ids): `accelbench.lake.compaction`. A year of daily campaigns leaves a
file per table, server and day; compacted, a report opens about a file per partition it reads. Campaigns may
land while it runs (a plain file always wins over compacted rows of its stem); the last `skip_days` days are
left alone, as campaigns still land there. Idempotent: a run with nothing to compact changes nothing. One run
at a time.
"""

from __future__ import annotations

from accelbench.airflow.dag_defaults import dag_kwargs, timed
from airflow.sdk import Param, dag, task

# The lake's tables (accelbench.lake.schemas.TABLES: not imported here, it imports pyarrow at parse time).
TABLES = ["runs", "sketches", "requests", "capacities", "quality", "startups", "costs"]


@dag(
    dag_id="accelbench_compact_lake",
    schedule=timed("@weekly"),
    doc_md=__doc__,
    params={
        "tables": Param(
            TABLES, type="array", minItems=1, items={"type": "string", "enum": TABLES}, description="tables"
        ),
        "skip_days": Param(
            2, type="integer", minimum=0, description="partitions of the last days left alone (0: none)"
        ),
    },
    **dag_kwargs("maintenance"),
)
def accelbench_compact_lake() -> None:
    @task
    def compact(params: dict | None = None) -> dict:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.maintenance import compact_lake

        return compact_lake(dict(params))

    compact()


accelbench_compact_lake()
