"""Compaction of a partition's small files (issue 50, `accelbench.lake.compaction`) on real files: a local
lake and a moto S3 server on loopback. Nothing lost, nothing read twice, before, during and after; a
campaign that lands (or re-lands a stem) while another process compacts keeps every row once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import uuid
from datetime import UTC, datetime, timedelta

import boto3
import pyarrow as pa
import pytest
from accelbench.lake.compacted import COMPACTED_PREFIX
from accelbench.lake.compaction import compact, compact_partition, partitions
from accelbench.lake.schemas import RUNS
from accelbench.lake.store import Lake

from tests.support.paths import REPO

DATE = "2026-11-10"
PARTITION = f"accelerator_type=cpu/date={DATE}"


@pytest.fixture(params=["local", "s3"])
def lake(request, tmp_path, monkeypatch) -> Lake:
    if request.param == "local":
        return Lake(str(tmp_path / "lake"))
    server = request.getfixturevalue("moto_server")
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": server.endpoint,
    }.items():
        monkeypatch.setenv(key, value)
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    return Lake(f"s3://{bucket}/lake")


def _runs(stem: str, n: int, value: float) -> pa.Table:
    rows = [
        {"run_id": f"{stem}/r{i}", "spec_id": stem, "repeat": i, "output_throughput": value + i}
        for i in range(n)
    ]
    return pa.Table.from_pylist(rows, schema=RUNS)


def _land(lake: Lake, stem: str, n: int = 3, value: float = 100.0, date: str = DATE) -> None:
    lake.write_table("runs", _runs(stem, n, value), "cpu", date, stem)


def _seen(lake: Lake) -> list[tuple[str, float]]:
    table = lake.read("runs", columns=["run_id", "output_throughput"])
    return sorted(zip(table["run_id"].to_pylist(), table["output_throughput"].to_pylist(), strict=True))


def _files(lake: Lake, date: str = DATE) -> list[str]:
    folder = lake.path("runs", "accelerator_type=cpu", f"date={date}")
    return sorted(p.rsplit("/", 1)[1] for p in lake.fs.find(folder))


def test_a_partition_is_compacted_to_one_file_and_reads_the_same(lake: Lake) -> None:
    for k in range(6):
        _land(lake, f"stem{k}", value=10.0 * k)
    _land(lake, "other", date="2026-11-11")  # a partition of one file: left alone
    before = _seen(lake)
    assert partitions(lake, "runs") == [PARTITION]

    done = compact_partition(lake, "runs", PARTITION)
    assert (done.inputs, done.rows, done.kept) == (6, 18, ())
    (name,) = _files(lake)
    assert name.startswith(COMPACTED_PREFIX) and _files(lake, "2026-11-11") == ["other.parquet"]
    assert _seen(lake) == before and len(before) == 21  # every row once: nothing lost, nothing twice
    assert compact(lake, ("runs",))["runs"].partitions == 0  # idempotent: one file is compact

    # A stem re-landed after compaction (a retried campaign) wins over its compacted rows ...
    _land(lake, "stem2", n=2, value=999.0)
    now = _seen(lake)
    assert [v for r, v in now if r.startswith("stem2/")] == [999.0, 1000.0] and len(now) == 20
    # ... and the next compaction keeps that landing, and replaces the first compacted file.
    again = compact_partition(lake, "runs", PARTITION)
    assert again.inputs == 2 and again.rows == 17 and len(_files(lake)) == 1  # 20 less "other"s 3
    assert _seen(lake) == now


def test_a_campaign_landing_while_another_process_compacts_keeps_every_row_once(lake: Lake) -> None:
    """Two processes on real files: this one compacts the partition again and again while a lander lands
    new stems and re-lands old ones (new values), each landing a whole file, as ingest does."""
    for k in range(5):
        _land(lake, f"old{k}")
    lander = textwrap.dedent(
        f"""
        import sys, time
        sys.path[:0] = [{str(REPO / "plugins")!r}, {str(REPO)!r}]
        from accelbench.lake.store import Lake
        from tests.integration.test_compaction import _land
        lake = Lake({lake.uri!r})
        for k in range(12):
            _land(lake, f"new{{k}}")
            _land(lake, f"old{{k % 5}}", value=500.0 + k)  # a retry re-landing an old stem, new figures
            time.sleep(0.05)
        print("landed")
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", lander], stdout=subprocess.PIPE, text=True, cwd=REPO)
    rounds = 0
    while proc.poll() is None or rounds < 2:
        compact_partition(lake, "runs", PARTITION)
        rounds += 1
        time.sleep(0.02)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "landed" in out
    seen = _seen(lake)
    ids = [r for r, _ in seen]
    assert len(ids) == len(set(ids)) == (5 + 12) * 3, ids  # every run once
    latest = {f"old{k}": 500.0 + max(j for j in range(12) if j % 5 == k) for k in range(5)}
    for run_id, value in seen:
        stem, repeat = run_id.split("/r")
        expected = latest.get(stem, 100.0) + int(repeat)
        assert value == expected, (run_id, value, expected)  # the newest landing of each stem
    compact_partition(lake, "runs", PARTITION)
    assert len(_files(lake)) == 1 and _seen(lake) == seen


def test_the_maintenance_dag_compacts_the_older_partitions_and_a_rerun_changes_nothing(
    airflow_db, accelbench_env
) -> None:
    """accelbench_compact_lake through dag.test(): yesterday's partitions are left to the campaigns still
    landing there (skip_days), older ones compacted; its table list is the lake's."""
    from accelbench.lake.schemas import TABLES

    from tests.support.airflow_dags import load_dag, run_dag, task_states

    assert sorted(load_dag(airflow_db, "accelbench_compact_lake").params["tables"]) == sorted(TABLES)
    lake = Lake(str(accelbench_env / "lake"))
    today = datetime.now(UTC).date()
    old, recent = str(today - timedelta(days=10)), str(today - timedelta(days=1))
    for k in range(4):
        _land(lake, f"old{k}", date=old)
        _land(lake, f"recent{k}", date=recent)
    before = _seen(lake)

    run = run_dag(airflow_db, "accelbench_compact_lake", {"tables": ["runs"], "skip_days": 2})
    assert task_states(run) == {"compact": "success"}
    counted = run.get_task_instance("compact").xcom_pull(task_ids="compact")
    assert counted == {"runs": {"partitions": 1, "files": 4, "rows": 12, "kept": 0}}
    assert len(_files(lake, old)) == 1 and len(_files(lake, recent)) == 4 and _seen(lake) == before
    again = run_dag(airflow_db, "accelbench_compact_lake", {"tables": ["runs"], "skip_days": 2})
    assert again.get_task_instance("compact").xcom_pull(task_ids="compact")["runs"]["partitions"] == 0
    assert _seen(lake) == before
