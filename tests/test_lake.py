"""The Parquet lake on a local directory and on a real S3 API (moto server on 127.0.0.1)."""

from __future__ import annotations

import boto3
import pyarrow.compute as pc
import pytest
from accelbench.lake.ddl import all_ddl
from accelbench.lake.ingest import Provenance, ingest, publish
from accelbench.lake.schemas import REQUESTS, RUNS
from accelbench.lake.store import Lake, safe_name

PROV = Provenance(
    dag_run_id="manual__2026-11-30T10:00:00+00:00", execution_mode="local", pinning='{"server": [1]}'
)
DATE = "2026-11-30"


def test_ddl_covers_every_column_and_the_partitions() -> None:
    ddl = all_ddl("s3://lake-bucket/accelbench")
    assert "CREATE EXTERNAL TABLE IF NOT EXISTS `accelbench`.`runs`" in ddl
    assert "LOCATION 's3://lake-bucket/accelbench/requests/'" in ddl
    assert "PARTITIONED BY (`accelerator_type` string, `date` string)" in ddl
    for field in (*RUNS, *REQUESTS):
        assert f"`{field.name}`" in ddl
    assert "`started_at` timestamp" in ddl and "`tokens_agree` boolean" in ddl


@pytest.mark.vllm
def test_ingest_turns_raw_output_into_consistent_rows(driven) -> None:  # type: ignore[no-untyped-def]
    driver, envelope = driven
    data = ingest(envelope, driver.spec_dir, PROV)
    assert data.runs.num_rows == 4 and data.requests.num_rows == 4 * 12
    runs = data.runs.to_pylist()
    for row in runs:
        assert row["status"] == "ok" and row["tokens_agree"] is True
        assert row["completed"] == 12 and row["total_output_tokens"] == 12 * 16
        assert row["mean_ttft_ms"] <= row["mean_e2el_ms"]
        assert row["p99_ttft_ms"] is not None and row["server_rss_peak_bytes"] > 0
        assert row["vllm_version"].startswith("0.32") and row["execution_mode"] == "local"
        assert row["dag_run_id"] == PROV.dag_run_id
    reqs = data.requests
    assert pc.all(pc.less_equal(reqs["ttft_s"], reqs["e2el_s"])).as_py()
    assert set(reqs["output_tokens"].to_pylist()) == {16}
    assert set(reqs["run_id"].to_pylist()) == {r["run_id"] for r in runs}


@pytest.mark.vllm
@pytest.mark.parametrize("where", ["local", "s3"])
def test_publish_is_idempotent_and_readable(driven, where, tmp_path, aws_on_moto) -> None:  # type: ignore[no-untyped-def]
    driver, _ = driven
    if where == "local":
        lake = Lake(str(tmp_path / "lake"))
    else:
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="lake-bucket")
        lake = Lake("s3://lake-bucket/accelbench")
    publish(lake, driver.spec_dir, PROV, DATE)
    publish(lake, driver.spec_dir, PROV, DATE)  # a retried task: same files, no duplicate rows
    runs, requests = lake.read("runs"), lake.read("requests")
    assert runs.num_rows == 4 and requests.num_rows == 48
    assert set(runs["accelerator_type"].to_pylist()) == {"cpu"} and set(runs["date"].to_pylist()) == {DATE}
    raw = lake.fs.find(lake.path("raw"))
    assert any(p.endswith("envelope.json") for p in raw) and any(p.endswith("c4-r1.json") for p in raw)
    files = lake.fs.find(lake.path("runs"))
    assert len(files) == 1 and not any("/." in f for f in files)  # no temporary files left behind


def test_safe_names_for_airflow_run_ids() -> None:
    assert safe_name("manual__2026-11-30T10:00:00+00:00") == "manual__2026-11-30T10_00_00_00_00"


def test_relative_lake_paths_are_local(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    lake = Lake("rel/lake")
    assert lake.local and lake.uri_of(lake.path("runs")).startswith(str(tmp_path))
