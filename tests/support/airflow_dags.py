"""The repository's DAGs loaded and run with real Airflow (DagBag, dag.test()), for the DAG tests."""

from __future__ import annotations

from tests.support.paths import DAGS


def dagbag(airflow_db):
    """The DAG folder parsed; `airflow_db` (the fixture) only makes sure the metadata DB exists."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def run_dag(airflow_db, dag_id: str, conf: dict | None = None):
    """One run of `dag_id` with dag.test(); returns the DAG run."""
    dag = dagbag(airflow_db).get_dag(dag_id)
    return dag.test(run_conf=conf or {})


def task_states(dag_run) -> dict[str, str]:
    """task id -> state of a finished DAG run."""
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}
