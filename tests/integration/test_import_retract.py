"""Importing `vllm bench serve` results measured elsewhere, and retracting runs: library and DAGs."""

from __future__ import annotations

import copy
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
from airflow.sdk.definitions.param import ParamValidationError
from airflow.utils.session import create_session
from sqlalchemy import select

from tests.support.airflow_dags import load_dag, run_dag, task_states
from tests.support.paths import REPO

RESULT = REPO / "tests" / "data" / "bench_results" / "vllm-bench-serve-c2.json"
WHERE = {"accelerator_type": "gpu", "instance_type": "g6e.xlarge", "accelerator_count": 1, "model": "org/m"}
# What the import task takes from the type's tier (accelbench.tiers): its runtime and its ranks.
WHERE |= {"runtime": "vllm-gpu", "max_ranks": 1, "rank_unit": "GPUs"}
# What the caller states of the server and the workload (the file: 20 random prompts of 64 -> 32 tokens).
STATED = {"vllm_version": "0.32.0", "input_len": 64, "output_len": 32}
GPU = ImportTarget(**WHERE, **STATED)


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
    # 8 failed: the totals cover the 12 completed requests
    overloaded = {"completed": 12, "failed": 8, "total_input_tokens": 777, "total_output_tokens": 384}
    (source / "a-overloaded.json").write_text(json.dumps(original | overloaded))
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


def test_the_rows_carry_what_the_caller_stated_and_what_the_file_records(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    source = _sources(tmp_path / "src")
    (source / "notes.json").unlink()
    original = json.loads(RESULT.read_text())
    # --metadata keys named like a param: the image the caller left empty is taken from the file.
    (source / "tp2.json").write_text(
        json.dumps(original | {"max_concurrency": 8, "image": "vllm/vllm-openai:v0.32.0"})
    )
    target = ImportTarget(
        **(WHERE | {"accelerator_count": 4, "max_ranks": 4}), **STATED, tensor_parallel_size=2
    )
    report = import_results(lake, str(source), target, "manual__x", (tmp_path,))
    assert (report.runs, report.refused) == (3, {})
    runs = {r["level_value"]: r for r in lake.read("runs").to_pylist()}
    # Exactly the columns a campaign's row of the fixed 64 -> 32 workload has.
    for row in runs.values():
        assert {k: row[k] for k in ("workload", "dataset", "endpoint", "prefix_len")} == {
            "workload": "fixed",
            "dataset": "random",
            "endpoint": "completions",  # the file's backend "openai" calls /v1/completions
            "prefix_len": None,
        }
        assert (row["input_len"], row["output_len"], row["range_ratio"]) == (64, 32, 0.0)
        assert (row["vllm_version"], row["tensor_parallel_size"]) == ("0.32.0", 2)
        assert row["served_model_name"] == original["model_id"] and row["execution_mode"] == "imported"
    assert runs[2]["image"] is None and runs[8]["image"] == "vllm/vllm-openai:v0.32.0"
    # A rate level keeps the file's burstiness (as a campaign's rate rows); a concurrency level has none.
    assert (runs[4]["level_kind"], runs[4]["burstiness"]) == ("rate", original["burstiness"])
    assert runs[2]["burstiness"] is None

    # A named profile brings its own shape: the chat profile, on the endpoint its backend calls.
    chat = tmp_path / "chat"
    chat.mkdir()
    lens = {"input_lens": [256] * 20, "output_lens": [128] * 20}
    totals = {"total_input_tokens": 256 * 20, "total_output_tokens": 128 * 20, "backend": "openai-chat"}
    (chat / "c2.json").write_text(json.dumps(original | lens | totals))
    target = ImportTarget(**WHERE, vllm_version="0.32.0", workload="chat")
    assert import_results(lake, str(chat), target, "manual__chat", (tmp_path,)).runs == 1
    (row,) = [r for r in lake.read("runs").to_pylist() if r["workload"] == "chat"]
    assert (row["endpoint"], row["input_len"], row["output_len"], row["range_ratio"]) == (
        "chat",
        256,
        128,
        0.5,
    )


def test_an_import_without_a_vllm_version_or_a_workload_that_contradicts_itself_is_refused() -> None:
    for missing in (None, "", "  "):
        with pytest.raises(ConfigError, match=r"^vllm_version=.*: required: the vLLM version"):
            ImportTarget(**WHERE, vllm_version=missing, input_len=64, output_len=32)
    with pytest.raises(TypeError, match="vllm_version"):
        ImportTarget(**WHERE, input_len=64, output_len=32)  # type: ignore[call-arg]
    for stated, field, why in (
        ({"output_len": 32}, "input_len", "required for workload=fixed"),
        ({"workload": "chat", "input_len": 64}, "input_len", "the chat workload has input_len=256"),
        (
            {"workload": "chat", "endpoint": "completions"},
            "endpoint",
            "the chat workload has endpoint='chat'",
        ),
        ({"workload": "custom"}, "dataset", "required for workload=custom"),
        ({"workload": "long"}, "workload", "one of fixed, chat"),
        (STATED | {"dataset": "sharegpt"}, "dataset", "a named dataset is workload=custom"),
        (STATED | {"range_ratio": 1.5}, "range_ratio", "between 0 and 1"),
        (STATED | {"endpoint": "responses"}, "endpoint", "one of completions, chat"),
        (STATED | {"tensor_parallel_size": 2}, "tensor_parallel_size", "g6e.xlarge has 1 GPU"),
    ):
        with pytest.raises(ConfigError, match=rf"^{field}=.*{re.escape(why)}"):
            ImportTarget(**WHERE, **({"vllm_version": "0.32.0"} | stated))


def test_a_file_that_contradicts_the_caller_is_refused_naming_what_differs(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    source = tmp_path / "src"
    source.mkdir()
    original = json.loads(RESULT.read_text())
    (source / "good.json").write_text(json.dumps(original))
    (source / "chat.json").write_text(json.dumps(original | {"backend": "openai-chat"}))
    (source / "no-eos.json").write_text(json.dumps(original | {"total_output_tokens": 20 * 9}))
    (source / "other-model.json").write_text(json.dumps(original | {"model_id": "meta-llama/Llama-3.1-8B"}))
    (source / "metadata.json").write_text(json.dumps(original | {"vllm_version": "0.10.1"}))
    longer = ImportTarget(**WHERE, **(STATED | {"input_len": 512}))
    report = import_results(lake, str(source), longer, "manual__x", (tmp_path,))
    assert report.runs == 0 and len(report.refused) == 5  # every file averaged 64.75 input tokens
    assert "input_len=512, but its 20 completed requests averaged 64.8 input tokens" in "".join(
        report.refused.values()
    )

    completions = ImportTarget(**WHERE, **STATED, endpoint="completions")  # else the file's backend says it
    report = import_results(lake, str(source), completions, "manual__x", (tmp_path,))
    refused = {Path(k).stem: why for k, why in report.refused.items()}
    assert report.imported and set(refused) == {"chat", "no-eos", "other-model", "metadata"}
    assert (
        "endpoint='completions', but the file's backend 'openai-chat' calls /v1/chat/completions"
        in refused["chat"]
    )
    assert "output_len=32, but its 20 completed requests averaged 9.0 output tokens" in refused["no-eos"]
    assert "--ignore-eos" in refused["no-eos"]
    assert (
        "model='org/m', but the file benchmarked model_id='meta-llama/Llama-3.1-8B'" in refused["other-model"]
    )
    assert "vllm_version='0.32.0', but the file's metadata says vllm_version='0.10.1'" in refused["metadata"]
    assert lake.read("runs").num_rows == 1


def test_importing_a_file_again_under_another_tier_or_date_keeps_one_copy(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    source = _sources(tmp_path / "src")
    (source / "notes.json").unlink()
    import_results(lake, str(source), GPU, "first", (tmp_path,))
    cpu = ImportTarget(
        accelerator_type="cpu", instance_type="m8g.xlarge", accelerator_count=0, model="org/m", **STATED
    )
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
    conf = {"source": str(source), **WHERE, **STATED, "image": "vllm/vllm-openai:v0.11.0"}
    del conf["accelerator_count"]  # the catalog's
    params = copy.deepcopy(load_dag(airflow_db, "accelbench_import_results").params)
    params.update({k: v for k, v in conf.items() if k != "vllm_version"})
    with pytest.raises(ParamValidationError, match="param vllm_version"):
        params.validate()  # the form refuses an import without its vLLM version

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
    assert {(r["image"], r["tensor_parallel_size"], r["workload"], r["input_len"]) for r in runs} == {
        ("vllm/vllm-openai:v0.11.0", 1, "fixed", 64)
    }

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
