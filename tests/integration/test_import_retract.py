"""Importing `vllm bench serve` results measured elsewhere, and retracting runs: library and DAGs."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.models import Retraction
from accelbench.catalog.retract import check_run_ids, retract
from accelbench.errors import ConfigError
from accelbench.lake.imported import ImportTarget, import_results
from accelbench.lake.store import Lake
from airflow.models.asset import AssetEvent
from airflow.utils.session import create_session
from sqlalchemy import select

from tests.support.airflow_dags import run_dag, task_states
from tests.support.paths import REPO

RESULT = REPO / "tests" / "data" / "bench_results" / "vllm-bench-serve-c2.json"
GPU = ImportTarget(accelerator_type="gpu", instance_type="g6e.xlarge", accelerator_count=1, model="org/m")


def _sources(folder: Path) -> Path:
    """The real result file, the same level saved without --save-detailed at a fixed rate, a JSON
    file that is not a bench result, and a non-JSON file that is ignored."""
    folder.mkdir(parents=True)
    shutil.copy(RESULT, folder / "detailed.json")
    summary = json.loads(RESULT.read_text())
    for key in ("ttfts", "itls", "latencies", "input_lens", "output_lens", "errors", "generated_texts"):
        summary.pop(key)
    summary |= {"max_concurrency": None, "request_rate": 4.0, "output_throughput": 99.0}
    (folder / "sub").mkdir()
    (folder / "sub" / "summary.json").write_text(json.dumps(summary))
    (folder / "notes.json").write_text(json.dumps({"completed": 3}))
    (folder / "README.txt").write_text("not a result")
    return folder


def test_import_keeps_every_good_file_names_the_bad_one_and_is_idempotent(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    source = _sources(tmp_path / "src")
    report = import_results(lake, str(source), GPU, "manual__x", (tmp_path,))
    assert report.runs == 2 and report.requests == 20
    (bad,) = report.refused
    assert (
        bad.endswith("notes.json")
        and "num_prompts" in report.refused[bad]
        and "p99_ttft_ms" in report.refused[bad]
    )
    runs = {r["level_kind"]: r for r in lake.read("runs").to_pylist()}
    detailed, summary = runs["concurrency"], runs["rate"]
    original = json.loads(RESULT.read_text())
    assert detailed["level_value"] == 2 and summary["level_value"] == 4
    assert (
        detailed["output_throughput"] == original["output_throughput"] and summary["output_throughput"] == 99
    )
    assert detailed["p99_tpot_ms"] == original["p99_tpot_ms"]
    for row in runs.values():
        assert (row["execution_mode"], row["accelerator_type"], row["instance_type"]) == (
            "imported",
            "gpu",
            "g6e.xlarge",
        )
        assert row["date"] == "2026-12-01" and row["accelerator_count"] == 1 and row["status"] == "ok"
        assert Path(row["source_uri"]).read_bytes() in (
            RESULT.read_bytes(),
            (source / "sub/summary.json").read_bytes(),
        )
    requests = lake.read("requests").to_pylist()
    assert {r["run_id"] for r in requests} == {detailed["run_id"]}
    assert sorted(r["ttft_s"] for r in requests) == sorted(original["ttfts"])
    again = import_results(lake, str(source), GPU, "manual__y", (tmp_path,))
    assert again.runs == 2
    assert lake.read("runs").num_rows == 2 and lake.read("requests").num_rows == 20  # replaced, not added


def test_a_file_with_failed_requests_is_an_errors_level_and_a_bad_field_refuses_only_its_file(
    tmp_path: Path,
) -> None:
    lake = Lake(str(tmp_path / "lake"))
    source = tmp_path / "src"
    source.mkdir()
    original = json.loads(RESULT.read_text())
    (source / "a-overloaded.json").write_text(json.dumps(original | {"completed": 12, "failed": 8}))
    (source / "b-bad-rate.json").write_text(
        json.dumps(original | {"max_concurrency": None, "request_rate": "abc"})
    )
    (source / "c-bad-type.json").write_text(json.dumps(original | {"ttfts": ["x"] * 20}))
    (source / "d-good.json").write_text(json.dumps(original | {"max_concurrency": 8}))
    none_done = {"max_concurrency": 4, "completed": 0, "failed": 20}
    (source / "e-all-failed.json").write_text(json.dumps(original | none_done))
    report = import_results(lake, str(source), GPU, "manual__x", (tmp_path,))
    assert sorted(Path(k).name for k in report.refused) == ["b-bad-rate.json", "c-bad-type.json"]
    assert "request_rate" in report.refused[str(source / "b-bad-rate.json")]
    runs = {r["level_value"]: r for r in lake.read("runs").to_pylist()}
    assert runs[2]["status"] == "errors" and runs[2]["error"] == "8 of 20 requests failed"
    assert runs[4]["status"] == "failed" and runs[4]["error"] == "20 of 20 requests failed"
    assert runs[8]["status"] == "ok" and runs[8]["requested_rate"] is None
    assert runs[8]["achieved_rate"] > 0 and runs[8]["peak_concurrency"] >= 1


def test_importing_a_file_again_under_another_tier_or_date_keeps_one_copy(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    source = _sources(tmp_path / "src")
    (source / "notes.json").unlink()
    import_results(lake, str(source), GPU, "first", (tmp_path,))
    cpu = ImportTarget(accelerator_type="cpu", instance_type="m8g.xlarge", accelerator_count=0, model="org/m")
    later = ImportTarget(**{**cpu.__dict__, "started_at": datetime(2026, 10, 1, tzinfo=UTC)})
    import_results(lake, str(source), later, "second", (tmp_path,))
    runs = lake.read("runs").to_pylist()
    assert len(runs) == 2 and {(r["accelerator_type"], r["date"]) for r in runs} == {("cpu", "2026-10-01")}
    assert lake.read("requests").num_rows == 20
    copies = lake.fs.glob(lake.path("imports", "*", "*", "*.json"))
    assert len(copies) == 2 and all("accelerator_type=cpu/date=2026-10-01" in c for c in copies)


def test_the_source_must_be_s3_or_under_the_import_roots(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    root = tmp_path / "allowed"
    root.mkdir()
    for source, why in (
        ("http://169.254.169.254/latest/meta-data/", "give an s3:// prefix or an absolute local path"),
        ("ftp://example.org/x", "give an s3:// prefix or an absolute local path"),
        ("relative/dir", "give an s3:// prefix or an absolute local path"),
        ("/etc", "not under the import roots"),
        (f"{root}/../../etc", "not under the import roots"),
    ):
        with pytest.raises(ConfigError, match=re.escape(why)):
            import_results(lake, source, GPU, "x", (root,))
    assert not Path(lake.uri).exists()  # refused before anything was read or written


def test_import_from_an_s3_prefix(tmp_path: Path, aws_on_moto, monkeypatch) -> None:
    bucket = f"results-{uuid.uuid4().hex[:12]}"
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="baselines/h100/c2.json", Body=RESULT.read_bytes())
    lake = Lake(str(tmp_path / "lake"))
    report = import_results(lake, f"s3://{bucket}/baselines", GPU, "manual__s3", ())
    assert (report.runs, report.requests, report.refused) == (1, 20, {})
    with pytest.raises(ConfigError, match=r"source=.*no such directory or prefix"):
        import_results(lake, f"s3://{bucket}/nothing-here", GPU, "manual__s3", ())


def test_retractions_need_known_runs_a_reason_and_are_idempotent(engine) -> None:
    known = {"a", "b", "c"}
    with pytest.raises(ConfigError, match=r"run_ids=\['zz'\]: no such run"):
        check_run_ids(["a", "zz"], None, known)
    with pytest.raises(ConfigError, match="superseded_by='a': a run cannot supersede itself"):
        check_run_ids(["a"], "a", known)
    with pytest.raises(ConfigError, match="reason"):
        retract(engine, ["a"], "   ")
    ids = check_run_ids(["a", "b", "a"], "c", known)
    assert ids == ["a", "b"]
    first = retract(engine, ids, "node was throttled", "c", by="alice")
    assert first.added == ["a", "b"]
    assert retract(engine, ids, "node was throttled", "c").unchanged == ["a", "b"]
    changed = retract(engine, ["a"], "wrong image", None)
    assert changed.changed == {"a": "node was throttled"}
    with engine.connect() as conn:
        rows = {r.run_id: r for r in conn.execute(select(Retraction))}
    assert rows["a"].reason == "wrong image" and rows["a"].superseded_by is None
    assert rows["b"].superseded_by == "c" and rows["b"].retracted_by == "alice"


@pytest.mark.airflow
def test_import_dag_then_retract_dag_then_report(
    airflow_db, accelbench_env: Path, tmp_path, monkeypatch, capfd, caplog
) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    monkeypatch.setenv("ACCELBENCH_IMPORT_ROOTS", str(tmp_path))
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    source = _sources(tmp_path / "src")
    conf = {"source": str(source), "accelerator_type": "gpu", "instance_type": "g6e.xlarge", "model": "org/m"}

    capfd.readouterr()
    wrong_tier = run_dag(airflow_db, "accelbench_import_results", conf | {"accelerator_type": "cpu"})
    assert task_states(wrong_tier) == {"import_results": "failed", "check_refused": "upstream_failed"}
    said = "".join(capfd.readouterr()) + caplog.text
    assert "accelerator_type='cpu': g6e.xlarge is a gpu instance type in the catalog" in said
    lake = Lake(str(accelbench_env / "lake"))
    assert lake.read("runs").num_rows == 0

    partly = run_dag(airflow_db, "accelbench_import_results", conf | {"vllm_version": "0.11.0"})
    # notes.json is refused: the others land and emit the lake asset (a report follows), the run fails
    assert task_states(partly) == {"import_results": "success", "check_refused": "failed"}
    with create_session() as session:
        events = session.scalars(select(AssetEvent).where(AssetEvent.source_run_id == partly.run_id)).all()
    assert len(events) == 1
    said = "".join(capfd.readouterr()) + caplog.text
    assert "1 of 3 files refused" in said and "notes.json: not a vllm bench serve result" in said
    assert lake.read("runs").num_rows == 2
    (source / "notes.json").unlink()
    ok = run_dag(airflow_db, "accelbench_import_results", conf | {"vllm_version": "0.11.0"})
    assert task_states(ok) == {"import_results": "success", "check_refused": "success"}
    runs = lake.read("runs").to_pylist()
    assert len(runs) == 2 and {r["vllm_version"] for r in runs} == {"0.11.0"}

    unknown = run_dag(airflow_db, "accelbench_retract_runs", {"run_ids": ["imported/nope"], "reason": "x"})
    assert task_states(unknown) == {"retract": "failed"}
    assert "run_ids=['imported/nope']: no such run" in "".join(capfd.readouterr()) + caplog.text
    gone = next(r["run_id"] for r in runs if r["level_kind"] == "rate")
    kept = next(r["run_id"] for r in runs if r["level_kind"] == "concurrency")
    retracted = run_dag(
        airflow_db,
        "accelbench_retract_runs",
        {"run_ids": [gone], "reason": "client was saturated", "superseded_by": kept},
    )
    assert task_states(retracted) == {"retract": "success"}
    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    migrate(engine)
    with engine.connect() as conn:
        (row,) = conn.execute(select(Retraction)).all()
    engine.dispose()
    assert (row.run_id, row.reason, row.superseded_by) == (gone, "client was saturated", kept)

    report = run_dag(airflow_db, "accelbench_cross_tier_report")
    assert task_states(report) == {"report": "success"}
    (folder,) = lake.fs.ls(lake.path("reports"))
    summary = json.loads(Path(folder, "summary.json").read_text())
    assert summary["rows"]["points"] == 1 and summary["rows"]["retracted"] == 1
    html = Path(folder, "report.html").read_text()
    retracted_section = html[html.index('id="retracted"') :]
    assert gone in retracted_section and "client was saturated" in retracted_section
