"""The Parquet lake on a local directory and on a real S3 API (moto server on 127.0.0.1)."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid

import boto3
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from accelbench.lake.ingest import Provenance, ingest, ingest_raw
from accelbench.lake.raw import RawEvidenceError, RawLocation, dir_reader, upload_raw, write_execution
from accelbench.lake.store import Lake, TableSink, safe_name

PROV = Provenance(
    dag_run_id="manual__2026-11-30T10:00:00+00:00", execution_mode="local", pinning='{"server": [1]}'
)
DATE = "2026-11-30"


@pytest.mark.vllm
def test_ingest_turns_raw_output_into_consistent_rows(driven) -> None:
    driver, envelope = driven
    data = ingest(envelope, dir_reader(driver.spec_dir), PROV)
    assert data.runs.num_rows == 5 and data.requests.num_rows == 5 * 12  # 2 levels x 2 repeats, the recheck
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


def _lake(where: str, tmp_path) -> Lake:
    if where == "local":
        return Lake(str(tmp_path / "lake"))
    bucket = f"lake-{uuid.uuid4().hex[:12]}"  # the moto server lives for the session: a fresh bucket
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    return Lake(f"s3://{bucket}/accelbench")


@pytest.mark.vllm
@pytest.mark.parametrize("where", ["local", "s3"])
def test_raw_upload_and_ingest_are_idempotent(driven, where, tmp_path, aws_on_moto) -> None:
    driver, envelope = driven
    spec_dir = tmp_path / "raw"
    shutil.copytree(driver.spec_dir, spec_dir)
    write_execution(spec_dir, execution_mode="local", node="host-1", pinning='{"server": [1]}')
    lake = _lake(where, tmp_path)
    loc = RawLocation("cpu", DATE, envelope["spec"]["campaign_id"], envelope["spec_id"])
    for _ in range(2):  # a retried or cleared task: same files, no duplicate rows
        upload_raw(lake, spec_dir, loc)
        ingest_raw(lake, loc, PROV.dag_run_id, zone="us-east-1a", node=None)
    runs, requests = lake.read("runs"), lake.read("requests")
    assert runs.num_rows == 5 and requests.num_rows == 60
    # Each run's latency distributions beside them, once: exact (12 requests), of its successful requests.
    sketches = lake.read("sketches").to_pylist()
    assert sorted((s["run_id"], s["metric"]) for s in sketches) == sorted(
        (r, m) for r in runs["run_id"].to_pylist() for m in ("ttft", "tpot", "e2el")
    )
    ok = [r for r in requests.to_pylist() if r["success"]]
    for s in sketches:
        column = {"ttft": "ttft_s", "tpot": "tpot_s", "e2el": "e2el_s"}[s["metric"]]
        mine = sorted(r[column] * 1000 for r in ok if r["run_id"] == s["run_id"] and r[column] is not None)
        assert s["values_ms"] == pytest.approx(mine) and s["count"] == len(mine)
    assert set(runs["accelerator_type"].to_pylist()) == {"cpu"} and set(runs["date"].to_pylist()) == {DATE}
    row = runs.to_pylist()[0]
    assert (row["execution_mode"], row["node"], row["zone"]) == ("local", "host-1", "us-east-1a")
    assert row["pinning"] == '{"server": [1]}' and row["dag_run_id"] == PROV.dag_run_id
    raw = lake.fs.find(lake.path(*loc.parts))
    assert any(p.endswith("envelope.json") for p in raw) and any(p.endswith("c4-r1.json") for p in raw)
    assert any(p.endswith("c4-r1.log") for p in raw)  # the bench logs are evidence too
    files = lake.fs.find(lake.path("runs"))
    assert len(files) == 1 and not any("/." in f for f in files)  # no temporary files left behind


@pytest.mark.vllm
@pytest.mark.parametrize("where", ["local", "s3"])
def test_requests_stream_level_by_level_and_a_failure_writes_nothing(
    driven, where, tmp_path, aws_on_moto, monkeypatch
) -> None:
    driver, envelope = driven
    spool = tmp_path / "spool"  # where S3 uploads are staged: must be empty afterwards
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    monkeypatch.setattr(TableSink, "ROW_GROUP_ROWS", 20)  # 12 requests a level: a row group every 2 levels
    spec_dir = tmp_path / "raw"
    shutil.copytree(driver.spec_dir, spec_dir)
    lake = _lake(where, tmp_path)
    loc = RawLocation("cpu", DATE, envelope["spec"]["campaign_id"], envelope["spec_id"])
    upload_raw(lake, spec_dir, loc)
    landed = ingest_raw(lake, loc, PROV.dag_run_id)
    assert landed is not None and landed.request_rows == 60  # 4 levels and the recheck
    path = lake.table_path("requests", loc.accelerator_type, loc.date, loc.stem)
    with lake.fs.open(path, "rb") as fh:
        stored = pq.ParquetFile(fh)
        assert stored.metadata.num_row_groups == 3 and stored.metadata.num_rows == 60
    whole = ingest(envelope, dir_reader(spec_dir), PROV).requests
    assert lake.read("requests").drop_columns(["accelerator_type", "date"]).equals(whole)

    # The last level's result is corrupt: the error names it, and the files already there stay intact.
    before = {p: lake.fs.cat_file(p) for p in lake.fs.find(lake.root) if "/raw/" not in p}
    last = envelope["levels"][-1]["result_file"]
    (spec_dir / last).write_text('{"ttfts": [0.1')
    upload_raw(lake, spec_dir, loc)
    with pytest.raises(RawEvidenceError, match=f"{last}: not JSON"):
        ingest_raw(lake, loc, PROV.dag_run_id)
    after = {p: lake.fs.cat_file(p) for p in lake.fs.find(lake.root) if "/raw/" not in p}
    assert after == before and len(before) == 3  # requests, sketches and runs, no temporary file
    assert list(spool.iterdir()) == []


@pytest.mark.parametrize("where", ["local", "s3"])
def test_missing_or_malformed_raw_evidence(where, tmp_path, aws_on_moto) -> None:
    lake = _lake(where, tmp_path)
    loc = RawLocation("cpu", DATE, "campaign-x", "m8g-xlarge-0123456789ab")
    assert ingest_raw(lake, loc, "run-1") is None  # nothing there: nothing written
    assert not lake.fs.exists(lake.path("runs"))
    spec_dir = tmp_path / "bad"
    spec_dir.mkdir()
    (spec_dir / "envelope.json").write_text("{truncated")
    upload_raw(lake, spec_dir, loc)
    with pytest.raises(RawEvidenceError, match=r"raw/accelerator_type=cpu/.*/envelope.json: not JSON"):
        ingest_raw(lake, loc, "run-1")
    (spec_dir / "envelope.json").write_text(json.dumps({"spec": {}, "levels": []}))
    upload_raw(lake, spec_dir, loc)
    with pytest.raises(RawEvidenceError, match="lacks spec_id, loadgen_version"):
        ingest_raw(lake, loc, "run-1")
    assert not lake.fs.exists(lake.path("runs"))


def test_safe_names_for_airflow_run_ids() -> None:
    assert safe_name("manual__2026-11-30T10:00:00+00:00") == "manual__2026-11-30T10_00_00_00_00"


def test_relative_lake_paths_are_local(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    lake = Lake("rel/lake")
    assert lake.local and lake.uri_of(lake.path("runs")).startswith(str(tmp_path))


@pytest.mark.vllm
def test_ingest_takes_only_its_own_attempts_evidence_and_drops_an_earlier_attempts_rows(
    driven, tmp_path, monkeypatch
) -> None:
    """A cleared rerun whose server never started must not pass the previous attempt's rows off as its
    own: the raw folder (same place for every attempt) still holds them."""
    from accelbench.airflow.tasks.campaign import ingest_group
    from airflow.sdk.exceptions import AirflowSkipException

    def ingest_spec(spec: dict, run_id: str, date: str, result: dict, hints: dict) -> dict:
        """The ingest task on a server of this one workload, the benchmark's result naming `attempt`."""
        runs = [{"spec_id": envelope["spec_id"], "attempt": result["attempt"]}] if result else []
        (landed,) = ingest_group({"specs": [spec]}, run_id, date, {"runs": runs}, hints)
        return landed

    driver, envelope = driven
    spec_dir = tmp_path / "raw"
    shutil.copytree(driver.spec_dir, spec_dir)
    saved = json.loads((spec_dir / "envelope.json").read_text()) | {"attempt": "attempt-a"}
    (spec_dir / "envelope.json").write_text(json.dumps(saved))
    lake = Lake(str(tmp_path / "lake"))
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", lake.uri)
    loc = RawLocation("cpu", DATE, envelope["spec"]["campaign_id"], envelope["spec_id"])
    upload_raw(lake, spec_dir, loc)
    done = ingest_spec(envelope["spec"], PROV.dag_run_id, DATE, {"attempt": "attempt-a"}, {})
    assert done["runs_rows"] == 5 and lake.read("runs").num_rows == 5
    with pytest.raises(AirflowSkipException, match="is from attempt attempt-a, not attempt-b"):
        ingest_spec(envelope["spec"], PROV.dag_run_id, DATE, {"attempt": "attempt-b"}, {})
    assert lake.read("runs").num_rows == 0 and lake.read("requests").num_rows == 0
    assert lake.read("sketches").num_rows == 0
    upload_raw(lake, spec_dir, loc)
    ingest_spec(envelope["spec"], PROV.dag_run_id, DATE, {"attempt": "attempt-a"}, {})
    with pytest.raises(AirflowSkipException, match=r"no raw evidence for .* from this attempt"):
        ingest_spec(envelope["spec"], PROV.dag_run_id, DATE, {}, {})  # the benchmark reported nothing
    assert lake.read("runs").num_rows == 0


def _reference_rows(result: dict, n: int) -> list[dict]:
    """The `requests` columns by their definitions, one request at a time (what request_table vectorises)."""
    starts, queue, errors = result.get("start_times") or [], result.get("queue_times") or [], result["errors"]
    rows = []
    for i in range(n):
        itls, error = sorted(result["itls"][i]), errors[i] if i < len(errors) else ""
        ttft, e2el, out = result["ttfts"][i], result["latencies"][i], result["output_lens"][i]
        rows.append(
            {
                "success": not error,
                "start_offset_s": starts[i] - min(starts) if starts else None,
                "queue_time_s": queue[i] if i < len(queue) else None,
                "tpot_s": (e2el - ttft) / (out - 1) if out > 1 and not error else None,
                "itl_mean_s": sum(itls) / len(itls) if itls else None,
                "itl_p50_s": itls[round(0.5 * (len(itls) - 1))] if itls else None,
                "itl_p99_s": itls[round(0.99 * (len(itls) - 1))] if itls else None,
                "itl_max_s": itls[-1] if itls else None,
            }
        )
    return rows


@pytest.mark.parametrize("seed", range(40))
def test_request_table_matches_the_per_request_definitions(seed: int) -> None:
    import random

    from accelbench.lake.ingest import request_table

    rng = random.Random(seed)
    n = rng.randint(0, 25)
    itls = [[rng.random() for _ in range(rng.choice([0, 1, 2, 3, 4, 7, 100]))] for _ in range(n)]
    result = {
        "ttfts": [rng.random() for _ in range(n)],
        "latencies": [1 + rng.random() for _ in range(n)],
        "itls": itls,
        "input_lens": [rng.randint(1, 9) for _ in range(n)],
        "output_lens": [len(x) + 1 if rng.random() < 0.9 else rng.choice([0, 1]) for x in itls],
        "errors": [rng.choice(["", "", "connection reset"]) for _ in range(rng.randint(0, n))],
    }
    if seed % 2:
        result["start_times"] = [100 + 5 * rng.random() for _ in range(n)]
        result["queue_times"] = [rng.random() for _ in range(rng.randint(0, n))]
    table = request_table(result, "run", "campaign", "spec").to_pylist()
    assert [r["request_index"] for r in table] == list(range(n))
    for got, want in zip(table, _reference_rows(result, n), strict=True):
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-12) if value is not None else got[key] is None, key


def test_request_table_refuses_arrays_of_different_lengths() -> None:
    from accelbench.lake.ingest import request_table

    result = {
        "ttfts": [0.1, 0.2],
        "latencies": [1.0],
        "itls": [[], []],
        "input_lens": [1, 1],
        "output_lens": [2, 2],
    }
    with pytest.raises(ValueError, match="latencies has 1 entries, ttfts 2"):
        request_table(result, "run", "campaign", "spec")
