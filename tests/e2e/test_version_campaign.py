"""The per-version campaign: its matrix from configuration, one graph definition shared with the
weekly campaign, and "already measured with this matrix" read from the lake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accelbench.core.spec import BenchmarkSpec
from accelbench.errors import ConfigError
from accelbench.lake.measured import measured_specs
from accelbench.lake.store import Lake

from tests.support.airflow_dags import dagbag, run_dag, task_states
from tests.support.lake_rows import land_runs
from tests.support.planning import STORE

pytestmark = pytest.mark.airflow
DIGEST = "sha256:" + "ab" * 32
MATRIX = json.dumps(
    {
        "instance_types": ["m8g.xlarge", "c8g.2xlarge"],
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "concurrency": [1, 2],
        "repeats": 2,
    }
)


@pytest.fixture
def catalog(airflow_db, monkeypatch, kubernetes_ready) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(STORE))
    monkeypatch.setenv("ACCELBENCH_VERSION_MATRIX", MATRIX)
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"


def _plan(version: str | None, force: bool = False, mode: str = "kubernetes") -> list[dict]:
    from accelbench.airflow.tasks.versions import plan_version_campaign

    groups = plan_version_campaign(version, mode, force, "accelbench_cpu_version_campaign.r1", None)
    return [spec for group in groups for spec in group["specs"]]  # each server's workloads' specs


def test_both_campaign_dags_share_one_graph_after_planning(airflow_db) -> None:
    bag = dagbag(airflow_db)
    weekly, per_version = (
        bag.get_dag("accelbench_campaign"),
        bag.get_dag("accelbench_cpu_version_campaign"),
    )
    shape = {t.task_id: set(t.downstream_task_ids) for t in weekly.tasks}
    shape["summary"].add("regression_gate")  # the version campaign adds its gate after the summary
    shape["regression_gate"] = {"unanswered_regressions", "record_decision"}  # then its approval step
    shape["unanswered_regressions"] = {"approve_regressions"}
    shape["approve_regressions"] = {"record_decision"}
    shape["record_decision"] = set()
    assert {t.task_id: set(t.downstream_task_ids) for t in per_version.tasks} == shape
    assert type(per_version.timetable).__name__ == "PartitionedAssetTimetable"


def test_version_matrix_plans_at_the_partition_version_and_skips_what_the_lake_holds(
    catalog, accelbench_env: Path
) -> None:
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    specs = [BenchmarkSpec.model_validate(s) for s in _plan("0.19.1")]
    assert sorted(s.server.instance_type for s in specs) == ["c8g.2xlarge", "m8g.xlarge"]
    assert {s.server.image for s in specs} == {"vllm/vllm-openai-cpu:v0.19.1-arm64"}
    assert {s.load.concurrency for s in specs} == {(1, 2)} and {s.load.repeats for s in specs} == {2}
    m8g = next(s for s in specs if s.server.instance_type == "m8g.xlarge")

    lake = Lake.from_env()
    land_runs(lake, m8g, [1, 2], 1)  # one repeat of two: not complete
    land_runs(
        lake, next(s for s in specs if s is not m8g), [1, 2], 2, status="failed"
    )  # failed: not measured
    assert measured_specs(lake, specs) == []
    land_runs(lake, m8g, [1, 2], 2)
    assert measured_specs(lake, specs) == [m8g]
    left = _plan("0.19.1")
    assert [s["server"]["instance_type"] for s in left] == ["c8g.2xlarge"]  # m8g was measured: left out
    assert len(_plan("0.19.1", force=True)) == 2
    assert len(_plan("0.20.0")) == 2  # another version: another matrix key

    c8g = next(s for s in specs if s is not m8g)
    land_runs(lake, c8g, [1, 2], 2)
    with pytest.raises(AirflowSkipException, match="already measured with this matrix"):
        _plan("0.19.1")
    with pytest.raises(AirflowFailException, match="partition_key"):
        _plan(None)


def test_local_mode_refuses_another_version_than_its_own(catalog, vllm_python, monkeypatch) -> None:
    from accelbench.local.server import local_vllm_version
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    local = local_vllm_version()
    assert local.count(".") == 2 and "+" not in local
    with pytest.raises(
        AirflowFailException, match=r"version='0\.1\.0': local mode serves the vLLM installed"
    ):
        _plan("0.1.0", mode="local")
    (spec,) = {s["server"]["image"] for s in _plan(local, mode="local")}
    assert spec.endswith(f":v{local}-arm64")


def test_a_bad_version_matrix_names_the_setting(monkeypatch) -> None:
    from accelbench.airflow.dag_defaults import version_matrix

    monkeypatch.setenv("ACCELBENCH_VERSION_MATRIX", "{not json")
    with pytest.raises(ConfigError, match="ACCELBENCH_VERSION_MATRIX"):
        version_matrix()
    monkeypatch.setenv("ACCELBENCH_VERSION_MATRIX", '{"version": "0.1.0"}')
    with pytest.raises(ConfigError, match="without version"):
        version_matrix()


def test_version_backfill_requests_only_versions_not_yet_measured(
    catalog, airflow_db, accelbench_env: Path, monkeypatch
) -> None:
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session
    from sqlalchemy import select

    monkeypatch.setenv("ACCELBENCH_EXECUTION_MODE", "kubernetes")  # plans need no local vLLM here
    lake = Lake.from_env()
    for spec in (BenchmarkSpec.model_validate(s) for s in _plan("0.18.0")):
        land_runs(lake, spec, [1, 2], 2)

    run = run_dag(
        airflow_db, "accelbench_cpu_version_backfill", {"versions": ["0.18.0", "v0.19.0", "0.19.1"]}
    )
    assert task_states(run) == {"request_campaigns": "success"}
    with create_session() as session:
        events = session.scalars(select(AssetEvent).where(AssetEvent.source_run_id == run.run_id)).all()
        keys = {e.partition_key: dict(e.extra) for e in events}
    assert set(keys) == {"0.19.0", "0.19.1"}  # 0.18.0 is in the lake with this matrix
    assert keys["0.19.0"]["force"] is False

    forced = run_dag(airflow_db, "accelbench_cpu_version_backfill", {"versions": ["0.18.0"], "force": True})
    assert task_states(forced) == {"request_campaigns": "success"}
    nothing = run_dag(airflow_db, "accelbench_cpu_version_backfill", {"versions": ["0.18.0"]})
    assert task_states(nothing) == {"request_campaigns": "skipped"}


def test_a_date_backfill_plans_the_version_current_at_each_logical_date(
    catalog, accelbench_env: Path
) -> None:
    from datetime import UTC, datetime

    from accelbench.airflow.tasks.campaign import plan_benchmarks
    from accelbench.catalog.db import make_engine
    from accelbench.runtime.discovery import record_new_releases
    from accelbench.runtime.registry import Release

    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    releases = [
        Release(v, f"v{v}-arm64", f"vllm/vllm-openai-cpu:v{v}-arm64", d, datetime(2026, m, 1, tzinfo=UTC))
        for v, m, d in (("0.19.0", 9, DIGEST), ("0.20.0", 11, None), ("0.21.0rc1", 10, None))
    ]
    assert [r.version for r in record_new_releases(engine, releases)] == ["0.19.0", "0.20.0", "0.21.0rc1"]
    assert record_new_releases(engine, releases) == []  # known versions are not recorded twice
    engine.dispose()
    request = {
        "instance_types": ["m8g.xlarge"],
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "execution_mode": "kubernetes",
    }
    for logical_date, version in (
        ("2026-09-14", "0.19.0"),
        ("2026-10-26", "0.19.0"),
        ("2026-11-02", "0.20.0"),
    ):
        as_of = datetime.fromisoformat(logical_date).replace(tzinfo=UTC)
        ((spec,),) = (group["specs"] for group in plan_benchmarks(request, "c", as_of))
        assert spec["server"]["version"] == version, logical_date  # never the pre-release
        assert spec["server"]["image_digest"] == (DIGEST if version == "0.19.0" else None)  # pods pull by it


def test_partition_keys_are_checked_and_retracted_runs_do_not_count_as_measured(
    catalog, accelbench_env: Path
) -> None:
    from accelbench.catalog.db import make_engine
    from accelbench.catalog.retract import retract
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException, match=r"partition_key='latest': not a vLLM CPU version"):
        _plan("latest")
    assert _plan("v0.19.1") == _plan("0.19.1")  # one spelling in images, matrix keys and the lake

    specs = [BenchmarkSpec.model_validate(s) for s in _plan("0.19.1")]
    lake = Lake.from_env()
    for spec in specs:
        land_runs(lake, spec, [1, 2], 2)
    assert len(measured_specs(lake, specs)) == 2
    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    retract(engine, [f"{specs[0].spec_id}/c1-r0"], "node was throttled")
    engine.dispose()
    left = _plan("0.19.1")  # the retracted run's spec is measured again
    assert [s["server"]["instance_type"] for s in left] == [specs[0].server.instance_type]
