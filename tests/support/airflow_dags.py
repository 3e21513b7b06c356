"""The repository's DAGs loaded and run with real Airflow (DagBag, dag.test()), for the DAG tests."""

from __future__ import annotations

from tests.support.paths import DAGS


def dagbag(airflow_db):
    """The DAG folder parsed; `airflow_db` (the fixture) only makes sure the metadata DB exists."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def load_dag(airflow_db, dag_id: str):
    """`dag_id` parsed from its own file (each DAG file is named for its DAG: tests/integration/test_dags.py)
    by a DagBag of that file alone: the whole folder's 11 files took ~0.9 s a parse here, one file 0.02-0.2
    s, and the suite runs ~90 DAGs (dag.test() parses the folder once more for the metadata DB itself)."""
    from airflow.dag_processing.dagbag import DagBag

    path = DAGS / f"{dag_id}.py"
    dag = DagBag(dag_folder=str(path)).get_dag(dag_id) if path.is_file() else None
    return dag if dag is not None else dagbag(airflow_db).get_dag(dag_id)


def run_dag(airflow_db, dag_id: str, conf: dict | None = None):
    """One run of `dag_id` with dag.test(); returns the DAG run."""
    return load_dag(airflow_db, dag_id).test(run_conf=conf or {})


def task_states(dag_run) -> dict[str, str]:
    """task id -> state of a finished DAG run."""
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}
