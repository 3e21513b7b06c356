"""The campaign DAG end to end with dag.test(): plan, a real local vLLM server, the lake, the watcher."""

from __future__ import annotations

from pathlib import Path

import pytest
from accelbench.lake.store import Lake

from tests.test_dags import _run, _states

pytestmark = [pytest.mark.airflow, pytest.mark.vllm]


def test_campaign_runs_locally_and_lands_in_the_lake(
    airflow_db, tiny_model: Path, vllm_python: Path, accelbench_env: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    assert str(_run(airflow_db, "accelbench_instance_catalog").state) == "success"
    conf = {
        "model": str(tiny_model),
        "instance_types": ["m8g.xlarge"],
        "concurrency": [1, 2],
        "repeats": 1,
        "prompts_per_level": 6,
        "input_len": 32,
        "output_len": 8,
        "extra_engine_args": ["--enforce-eager"],
    }
    run = _run(airflow_db, "accelbench_cpu_campaign", conf)
    states = _states(run)
    assert str(run.state) == "success", states
    assert states == {"plan": "success", "benchmark": "success", "summary": "success", "watcher": "skipped"}
    runs = Lake(str(accelbench_env / "lake")).read("runs").to_pylist()
    assert [(r["level_value"], r["status"]) for r in runs] == [(1.0, "ok"), (2.0, "ok")]
    for r in runs:
        assert r["tokens_agree"] and r["total_output_tokens"] == 6 * 8
        assert r["instance_type"] == "m8g.xlarge" and r["execution_mode"] == "local"
        assert r["dag_run_id"] == run.run_id and r["vllm_version"].startswith("0.32")
        assert r["mean_ttft_ms"] <= r["mean_e2el_ms"]
        assert r["request_goodput"] is not None  # the form's default SLOs reach `vllm bench serve --goodput`
    requests = Lake(str(accelbench_env / "lake")).read("requests")
    assert requests.num_rows == 12


def test_bad_campaign_input_fails_planning_before_any_server_starts(
    airflow_db, accelbench_env: Path, monkeypatch, capfd
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    assert str(_run(airflow_db, "accelbench_instance_catalog").state) == "success"
    capfd.readouterr()
    conf = {"model": "org/not-in-any-store", "instance_types": ["r8g.large"], "concurrency": [1]}
    run = _run(airflow_db, "accelbench_cpu_campaign", conf)
    assert str(run.state) == "failed"
    states = _states(run)
    assert states["plan"] == "failed" and states["watcher"] == "failed"
    out = capfd.readouterr()
    text = out.out + out.err
    assert "model='org/not-in-any-store': no config.json found" in text
    assert "instance_types[0]='r8g.large': too small for a benchmark pod" in text
    assert not (accelbench_env / "work").exists()
