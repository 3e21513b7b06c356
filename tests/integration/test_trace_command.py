"""`accelbench trace`: timed traces from a usage log, from the lake's requests of a run, and generated,
through the command line on files the test writes; bad rows refused with their row number, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from accelbench import cli
from accelbench.lake.schemas import REQUESTS
from accelbench.lake.store import Lake
from accelbench.traces.timed_trace import parse


def _usage(path: Path, rows: list[str]) -> Path:
    path.write_text("created,prompt_tokens,completion_tokens,prompt\n" + "\n".join(rows) + "\n")
    return path


ARGS = [
    "--timestamp",
    "created",
    "--prompt-tokens",
    "prompt_tokens",
    "--completion-tokens",
    "completion_tokens",
]


def test_a_usage_log_becomes_a_trace_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _usage(
        tmp_path / "usage.csv",
        [
            "2026-12-01T10:00:00Z,120,30,the user's secret prompt",
            "2026-12-01T10:00:00.250Z,64,8,another",
            "2026-12-01T10:00:02Z,16,2,x",
            "2026-12-01T10:59:00Z,16,2,an hour later",
        ],
    )
    out = tmp_path / "trace.jsonl"
    assert cli.main(["trace", "usage", str(log), *ARGS, "--window-s", "60", "--out", str(out)]) == 0
    trace = parse(out.read_text())
    assert [(r.timestamp, r.input_length, r.output_length) for r in trace] == [
        (0.0, 120, 30),
        (0.25, 64, 8),
        (2.0, 16, 2),
    ]
    assert "secret" not in out.read_text()
    said = capsys.readouterr().out
    assert "3 requests over 2.0 s" in said and "sha256 " in said
    jsonl = tmp_path / "usage.jsonl"
    jsonl.write_text("\n".join(json.dumps({"t": 1764583200 + i, "in": 10 + i, "out": 3}) for i in range(3)))
    args = ["--timestamp", "t", "--prompt-tokens", "in", "--completion-tokens", "out"]
    assert cli.main(["trace", "usage", str(jsonl), *args, "--out", str(out)]) == 0
    assert [r.input_length for r in parse(out.read_text())] == [10, 11, 12]


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (",10,2,no time", "row 2: created=''"),
        ("2026-12-01T10:00:01Z,-4,2,negative", "row 2: prompt_tokens='-4'"),
        (
            "2026-12-01T09:00:00Z,10,2,earlier",
            "row 2: created='2026-12-01T09:00:00Z': earlier than the row above",
        ),
    ],
)
def test_a_bad_row_is_refused_with_its_number_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, said: str
) -> None:
    log = _usage(tmp_path / "usage.csv", ["2026-12-01T10:00:00Z,10,2,first", bad])
    out = tmp_path / "trace.jsonl"
    assert cli.main(["trace", "usage", str(log), *ARGS, "--out", str(out)]) == 2
    assert said in capsys.readouterr().err and not out.exists()


def test_the_lakes_requests_of_a_run_become_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = Lake(str(tmp_path / "lake"))
    rows = [
        {"run_id": "r1", "request_index": i, "start_offset_s": t, "input_tokens": 40, "output_tokens": 8}
        for i, t in enumerate((0.0, 0.5, 0.75))
    ] + [{"run_id": "r2", "request_index": 0, "start_offset_s": 0.0, "input_tokens": 9, "output_tokens": 1}]
    lake.write_table("requests", pa.Table.from_pylist(rows, schema=REQUESTS), "cpu", "2026-12-01", "s")
    out = tmp_path / "r1.jsonl"
    assert cli.main(["trace", "lake", "--run-id", "r1", "--lake", lake.uri, "--out", str(out)]) == 0
    assert [(r.timestamp, r.input_length) for r in parse(out.read_text())] == [
        (0.0, 40),
        (0.5, 40),
        (0.75, 40),
    ]
    assert cli.main(["trace", "lake", "--run-id", "nope", "--lake", lake.uri, "--out", str(out)]) == 2
    assert "run_id='nope': no requests of this run" in capsys.readouterr().err


def test_generate_writes_the_shipped_day(tmp_path: Path) -> None:
    from accelbench.traces.timed_trace import shipped

    out = tmp_path / "day.jsonl"
    assert cli.main(["trace", "generate", "--out", str(out)]) == 0
    assert out.read_text() == shipped().read_text()


@pytest.mark.airflow
def test_the_trace_dag_stores_a_trace_from_an_s3_usage_log_and_from_a_run(
    airflow_db, aws_on_moto, accelbench_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DAG (dag.test) reads a usage log from S3 (the local moto server) and a lake run's requests, and
    stores each trace under the lake's traces/; a bad row fails the task, naming its row."""
    import uuid

    import boto3
    from accelbench.traces.timed_trace import identity

    from tests.support.airflow_dags import run_dag, task_states

    bucket = f"usage-{uuid.uuid4().hex[:12]}"
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    log = "\n".join(json.dumps({"at": 1764583200 + t, "in": 64, "out": 8}) for t in (0, 1, 1.5, 30))
    s3.put_object(Bucket=bucket, Key="logs/day.jsonl", Body=log.encode())
    conf = {
        "name": "busy",
        "source": "usage_log",
        "usage_log": f"s3://{bucket}/logs/day.jsonl",
        "timestamp_column": "at",
        "prompt_tokens_column": "in",
        "completion_tokens_column": "out",
        "window_s": 5,
    }
    run = run_dag(airflow_db, "accelbench_make_trace", conf)
    assert task_states(run) == {"make_trace": "success"}
    stored = run.get_task_instance("make_trace").xcom_pull(task_ids="make_trace")
    path = accelbench_env / "lake" / "traces" / "busy.jsonl"
    text = path.read_text()
    assert [r.timestamp for r in parse(text)] == [0.0, 1.0, 1.5]  # the busiest 5 s
    assert stored["uri"].endswith("traces/busy.jsonl") and stored == {
        "uri": stored["uri"],
        **identity(text, parse(text)),
    }

    lake = Lake(str(accelbench_env / "lake"))
    rows = [
        {"run_id": "r1", "request_index": 0, "start_offset_s": 0.0, "input_tokens": 20, "output_tokens": 2}
    ]
    lake.write_table("requests", pa.Table.from_pylist(rows, schema=REQUESTS), "cpu", "2026-12-01", "s")
    run = run_dag(airflow_db, "accelbench_make_trace", {"name": "r1", "source": "lake_run", "run_id": "r1"})
    assert task_states(run) == {"make_trace": "success"}
    assert [r.input_length for r in parse((accelbench_env / "lake" / "traces" / "r1.jsonl").read_text())] == [
        20
    ]

    s3.put_object(
        Bucket=bucket, Key="logs/bad.jsonl", Body=(log + '\n{"at": 1764583300, "in": -1, "out": 8}').encode()
    )
    run = run_dag(
        airflow_db,
        "accelbench_make_trace",
        conf | {"name": "bad", "usage_log": f"s3://{bucket}/logs/bad.jsonl"},
    )
    assert task_states(run) == {"make_trace": "failed"}
    assert not (accelbench_env / "lake" / "traces" / "bad.jsonl").exists()
