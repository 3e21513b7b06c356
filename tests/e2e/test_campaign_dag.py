"""The campaign DAG end to end with dag.test(): plan, a real local vLLM server, the lake, the watcher."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import boto3
import pendulum
import pyarrow.parquet as pq
import pytest
from accelbench.core.startup_phases import PHASES
from accelbench.lake.store import Lake
from accelbench.loadgen.host import host_facts
from airflow.models.asset import AssetEvent
from airflow.utils.session import create_session
from sqlalchemy import select

from tests.support.airflow_dags import load_dag, run_dag, task_states
from tests.support.kube import KUBECONFIG
from tests.support.paths import REPO
from tests.support.specs import tiny_campaign_conf

pytestmark = [pytest.mark.airflow, pytest.mark.vllm]


def _lake_state(lake: Lake) -> tuple[list[str], list[tuple], int]:
    """What a rerun must leave unchanged: the file names, the run keys and the request count."""
    files = sorted(
        p.rsplit("/", 1)[-1] for name in ("runs", "requests") for p in lake.fs.find(lake.path(name))
    )
    keys = sorted((r["run_id"], r["status"], r["dag_run_id"]) for r in lake.read("runs").to_pylist())
    return files, keys, lake.read("requests").num_rows


def test_campaign_runs_locally_lands_in_the_lake_and_a_cleared_rerun_adds_nothing(
    airflow_db, tiny_model: Path, vllm_python: Path, accelbench_env: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    conf = tiny_campaign_conf(tiny_model)
    dag = load_dag(airflow_db, "accelbench_campaign")
    logical = pendulum.datetime(2026, 11, 30, 6, tz="UTC")
    run = dag.test(run_after=logical, logical_date=logical, run_conf=conf)
    states = task_states(run)
    assert str(run.state) == "success", states
    assert states == {
        "plan": "success",
        "benchmark": "success",
        "ingest": "success",
        "summary": "success",
        "watcher": "skipped",
    }
    lake = Lake(str(accelbench_env / "lake"))
    runs = lake.read("runs").to_pylist()
    here = host_facts()
    levels = [(r["level_value"], r["status"], r["recheck"]) for r in runs]
    assert levels == [(1.0, "ok", False), (2.0, "ok", False), (1.0, "ok", True)]  # the recheck last
    for r in runs:
        assert r["tokens_agree"] and r["total_output_tokens"] == 6 * 8
        assert r["instance_type"] == "m8g.xlarge" and r["execution_mode"] == "local"
        assert r["dag_run_id"] == run.run_id and r["vllm_version"].startswith("0.32")
        assert r["mean_ttft_ms"] <= r["mean_e2el_ms"]
        assert r["request_goodput"] is not None  # the form's default SLOs reach `vllm bench serve --goodput`
        # Where it ran: this machine, said on the row; not an m8g.xlarge unless EC2's DMI says so.
        assert {k: r[k] for k in here} == here and r["image"].startswith("vllm/vllm-openai-cpu:v")
        assert r["measured_on_instance"] is (here["host_instance_type"] == "m8g.xlarge")
        assert r["server_image_id"].startswith("vllm==0.32") and "local process" in r["server_image_id"]
    requests = lake.read("requests")
    assert requests.num_rows == 18
    assert {r["date"] for r in runs} == {"2026-11-30"} and runs[0]["pinning"] is not None
    starts = list((accelbench_env / "work").glob("*/server-starts.jsonl"))
    assert len(starts) == 1 and len(starts[0].read_text().splitlines()) == 1  # one server
    # Its start-up in phases (accelbench.core.startup_phases: vLLM's log lines, stamped as they appeared),
    # adding up to the start-up the server measured (execution.json), within a second.
    (startup,) = lake.read("startups").to_pylist()
    (execution,) = (accelbench_env / "lake" / "raw").rglob("execution.json")
    measured = json.loads(execution.read_text())["server_startup_s"]
    phases = [startup[name] for name in PHASES if startup[name] is not None]
    assert len(phases) == 4 and all(p >= 0 for p in phases), startup  # every boundary seen, in order
    assert abs(sum(phases) - measured) < 1.0 and abs(startup["ready_s"] - measured) < 1.0
    assert startup["vllm_weights_load_s"] is not None and startup["vllm_engine_init_s"] is not None
    assert startup["spec_id"] == runs[0]["spec_id"] and startup["model"] == runs[0]["model"]
    assert 0 <= startup["first_level_s"] < 30 and startup["dag_run_id"] == run.run_id
    # What it cost (the summary task): its billed seconds, from launch to stop; not priced on a stand-in host.
    (cost,) = lake.read("costs").to_pylist()
    assert cost["billed_s"] == startup["billed_s"] and cost["billed_s"] > startup["ready_s"]
    if here["host_instance_type"] != "m8g.xlarge":
        assert cost["usd"] is None and "not on a m8g.xlarge" in cost["unpriced"]

    # Clear the whole DAG run and run it again (dag.test clears the TIs of the same logical date and
    # replaces the run of the same run id):
    # the same run id, the same lake files, the same rows, no duplicates.
    before = _lake_state(lake)
    again = dag.test(run_after=logical, logical_date=logical, run_conf=conf)
    assert again.run_id == run.run_id and str(again.state) == "success", task_states(again)
    assert _lake_state(lake) == before
    # The rerun measured nothing again: the first run's evidence of its one workload is complete in the
    # lake (a cleared or retried benchmark measures only what is missing), and is landed again as it was.
    assert len(starts[0].read_text().splitlines()) == 1
    assert all(
        Path(r["source_uri"]).name == "envelope.json" and Path(r["source_uri"]).is_file() for r in runs
    )

    # Then prices and the report DAG: the campaign's points, labelled local and unpriced, in one page.
    assert str(run_dag(airflow_db, "accelbench_pricing_refresh").state) == "success"
    report = run_dag(airflow_db, "accelbench_cross_tier_report", {"slos": {"ttft_p99_ms": 60_000}})
    assert task_states(report) == {"report": "success"}
    (folder,) = lake.fs.ls(lake.path("reports"))
    summary = json.loads(Path(folder, "summary.json").read_text())
    assert (
        summary["runs_read"] == 3  # the recheck is read, and is no repeat of its point
        and summary["rows"]["points"] == 2
        # A p99 from one repeat of 6 requests has no upper bound at 95%: each level is undecided against
        # the form's SLOs, so there is no best level, local or priced (an undecided level never meets).
        and summary["rows"]["local_results"] == 0
        and summary["rows"]["best_under_slo"] == 0
    )
    points = pq.read_table(Path(folder, "points.parquet")).to_pylist()
    (latest,) = lake.read("startups").to_pylist()  # the one server's: the planner's cold start
    assert {p["startup_s"] for p in points} == {latest["ready_s"]}
    assert {p["slo_verdict"] for p in points} == {"undecided"}, [p["slo_why"] for p in points]
    assert all("p99" in p["slo_why"] for p in points)  # says which limit is undecided and what decides it
    html = Path(folder, "report.html").read_text()
    table = html[html.index('id="points-table"') : html.index("</table>", html.index('id="points-table"'))]
    assert "m8g.xlarge" in table and "local: " in table and "undecided" in table  # labelled as measured here
    assert all(p["on_demand_usd_per_1m_output_tokens"] is None for p in points)  # never priced
    headline = html[
        html.index('id="headline-table"') : html.index("</table>", html.index('id="headline-table"'))
    ]
    assert "local host only: nothing meets the SLOs" in headline and "undecided" in html
    # Throughput vs latency only: nothing priced to plot a cost of, no instance result for a version trend.
    assert html.count('data-chart="chart-throughput_vs_latency"') == 1 and html.count('data-chart="') == 1
    assert not re.search(
        r"""(src|href|url)\s*[=(]\s*["']?(https?:)?//""", html
    )  # opens offline: nothing fetched


def test_kubernetes_mode_is_refused_in_planning_until_pods_could_run(
    airflow_db, accelbench_env: Path, tmp_path: Path, monkeypatch, capfd, caplog, aws_on_moto
) -> None:
    """The mode switch reaches the plan task's preflight: a local lake, no load-generator image, a model
    only on the worker's disk and an unreachable API server are four problems of one failed plan, named by
    their settings; then, with the rest set up, the unreachable API server alone. No pod, no lake event,
    no client traceback in the log."""
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.replace("6443", "9"))  # port 9 (discard): connection refused
    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(connection))
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    store = REPO / "tests" / "data" / "model_configs"
    conf = {"model": str(store / "local--tiny-llama"), "execution_mode": "kubernetes"}
    capfd.readouterr()
    run = run_dag(airflow_db, "accelbench_campaign", conf)  # the default lake: a local directory
    states = task_states(run)
    assert str(run.state) == "failed" and states["plan"] == "failed" and states["watcher"] == "failed"
    assert states["benchmark"] == "upstream_failed"
    text = "".join(capfd.readouterr()) + caplog.text
    assert "campaign refused, 4 problem(s)" in text
    assert "ACCELBENCH_LAKE_URI=" in text and "kubernetes mode needs an s3:// lake" in text
    assert "ACCELBENCH_LOADGEN_IMAGE=None: unset" in text
    assert "is a path on the worker" in text and "ACCELBENCH_MODEL_STORE" in text
    assert "kubernetes_conn_id='kubernetes_default'" in text and "https://127.0.0.1:9 did not answer" in text

    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", f"s3://{bucket}")
    monkeypatch.setenv("ACCELBENCH_LOADGEN_IMAGE", "registry.example.org/accelbench-loadgen:0.1.0")
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(store))
    caplog.clear()
    run = run_dag(airflow_db, "accelbench_campaign", conf | {"model": "local/tiny-llama"})
    assert str(run.state) == "failed" and task_states(run)["plan"] == "failed"
    text = "".join(capfd.readouterr()) + caplog.text
    assert "campaign refused, 1 problem(s)" in text and "kubernetes_conn_id='kubernetes_default'" in text
    assert "ConfigException" not in text and "MaxRetryError" in text  # the cause, in one line
    assert not (accelbench_env / "work").exists()  # nothing ran locally
    with create_session() as session:
        events = session.scalars(select(AssetEvent).where(AssetEvent.source_run_id == run.run_id)).all()
    assert events == []


def test_bad_campaign_input_fails_planning_before_any_server_starts(
    airflow_db, accelbench_env: Path, monkeypatch, capfd
) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    capfd.readouterr()
    conf = {"model": "org/not-in-any-store", "instance_types": ["r8g.large"], "concurrency": [1]}
    run = run_dag(airflow_db, "accelbench_campaign", conf)
    assert str(run.state) == "failed"
    states = task_states(run)
    assert states["plan"] == "failed" and states["watcher"] == "failed"
    out = capfd.readouterr()
    text = out.out + out.err
    assert "model='org/not-in-any-store': no config.json found" in text
    assert "instance_types[0]='r8g.large': too small for a benchmark pod" in text
    assert not (accelbench_env / "work").exists()


def test_a_server_that_cannot_start_fails_its_benchmark_and_records_nothing(
    airflow_db, tiny_model: Path, vllm_python: Path, accelbench_env: Path, monkeypatch, capfd, caplog
) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    capfd.readouterr()
    conf = {
        "model": str(tiny_model),
        "concurrency": [1],
        "repeats": 1,
        "prompts_per_level": 2,
        "input_len": 16,
        "output_len": 4,
        "extra_engine_args": ["--enforce-eager", "--block-size=0"],  # vLLM refuses it at start-up
        "execution_mode": "local",
    }
    run = run_dag(airflow_db, "accelbench_campaign", conf)
    assert task_states(run) == {
        "plan": "success",
        "benchmark": "failed",
        "ingest": "skipped",
        "summary": "skipped",
        "watcher": "failed",
    }
    text = "".join(capfd.readouterr()) + caplog.text
    assert "ServerStartError: vLLM server exited with code" in text and "last lines of" in text
    assert "block_size" in text or "block-size" in text  # the server's own complaint, from its log tail
    lake = Lake(str(accelbench_env / "lake"))
    assert lake.read("runs").num_rows == 0 and lake.read("requests").num_rows == 0
