"""Retract runs: record them in the catalog's `retractions` with a reason and, optionally, the run
that supersedes them. The runs stay in the lake; reports leave them out by default and list them,
with the reason, in their own section. Every id must be a run in the lake. Running it again with the
same values changes nothing; a new reason updates the record (the old one is logged).
"""

from __future__ import annotations

from accelbench.airflow.assets import RETRACTIONS_ASSET
from accelbench.airflow.dag_defaults import dag_kwargs
from airflow.sdk import Param, dag, get_current_context, task

RUN_ID = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^[A-Za-z0-9._:+/=-]+$"}


@dag(
    dag_id="accelbench_retract_runs",
    schedule=None,
    doc_md=__doc__,
    params={
        "run_ids": Param([], type="array", minItems=1, items=RUN_ID, description="run_id values of `runs`"),
        "reason": Param("", type="string", minLength=1, maxLength=2000, description="Why they are withdrawn"),
        "superseded_by": Param(
            None, type=["null", "string"], description="run_id of the run that replaces them"
        ),
    },
    **dag_kwargs("report"),
)
def accelbench_retract_runs() -> None:
    @task(outlets=[RETRACTIONS_ASSET])
    def retract(params: dict | None = None) -> dict:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.retraction import retract_runs

        dag_run = get_current_context()["dag_run"]
        return retract_runs(dict(params), getattr(dag_run, "triggering_user_name", None))

    retract()


accelbench_retract_runs()
