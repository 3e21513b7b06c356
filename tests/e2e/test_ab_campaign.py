"""A/B comparisons through the campaign DAG (issue 48, point 5): a campaign of two variants of the tiny
model's server, their servers interleaved in rounds (a, b, a, b), judged by the regression gate's test.

A/B: `--max-num-active-seqs=2` at 8 concurrent requests lets the engine run 2 of them at once, the other 6
waiting: output throughput falls and TTFT rises (the library's reference run when the issue was filed:
throughput -45% [-47%, -43%], p99 TTFT +429%), so the campaign flags it, with an interval excluding 0. A/A:
two variants that change nothing flag nothing (the host's self-check).

Cheap enough for CI: one level, 4 repeats of 24 short requests per variant, in 2 rounds (4 servers a
campaign)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from accelbench.lake.store import Lake

from tests.support.airflow_dags import dagbag, run_dag, task_states

pytestmark = [pytest.mark.airflow, pytest.mark.vllm]
LEVEL, REPEATS, ROUNDS = 8, 4, 2
SLOWER = "--max-num-active-seqs=2"  # at most 2 sequences in the engine at once, of 8 in flight
METRICS = ("output_throughput", "p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p99_tpot_ms", "p99_e2el_ms")


def _conf(tiny_model: Path, variants: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": str(tiny_model),
        "instance_types": ["m8g.xlarge"],
        "concurrency": [LEVEL],  # one level: no recheck, each server only its repeats
        "repeats": REPEATS,
        "rounds": ROUNDS,
        "prompts_per_level": 24,
        "input_len": 16,
        "output_len": 16,
        "extra_engine_args": ["--enforce-eager"],
        "execution_mode": "local",
        "variants": variants,
    }


def _campaign(airflow_db, tiny_model: Path, variants: list[dict[str, Any]], monkeypatch) -> tuple[Any, dict]:
    """The campaign DAG with `variants`, as a user triggers it: its run and its summary's result."""
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    run = dagbag(airflow_db).get_dag("accelbench_campaign").test(run_conf=_conf(tiny_model, variants))
    states = task_states(run)
    assert str(run.state) == "success" and states["summary"] == "success", states
    return run, run.get_task_instance("summary").xcom_pull(task_ids="summary")


def _interleaved(lake: Lake, names: tuple[str, str]) -> list[dict[str, Any]]:
    """The runs in the order they ran: the variants' servers alternate (a, b, a, b: the scheduler starts the
    mapped benchmarks in the plan's order; dag.test() runs the first one last, b, a, b, a, which alternates
    as well), each round its share of the repeats, numbered on."""
    runs = sorted(lake.read("runs").to_pylist(), key=lambda r: r["started_at"])
    assert {r["status"] for r in runs} == {"ok"} and len(runs) == 2 * REPEATS
    servers = [(r["variant"], r["variant_round"]) for r in runs]
    order = list(dict.fromkeys(servers))  # each server's runs are consecutive
    assert sorted(order) == sorted((name, k) for name in names for k in range(ROUNDS)), servers
    assert all(a[0] != b[0] for a, b in pairwise(order)), servers  # never one variant twice running
    for name in names:
        mine = [r for r in runs if r["variant"] == name]
        assert sorted(r["repeat"] for r in mine) == list(range(REPEATS))  # one point's repeats, across rounds
        assert len({r["spec_id"] for r in mine}) == ROUNDS  # a server each round
    assert {r["ab_comparison"] for r in runs} == {" vs ".join(names)}
    return runs


def test_an_ab_campaign_flags_a_known_slowdown_with_an_interval_excluding_zero(
    airflow_db, tiny_model: Path, vllm_python: Path, accelbench_env: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    variants = [{"name": "a"}, {"name": "b", "extra_engine_args": ["--enforce-eager", SLOWER]}]
    _, summary = _campaign(airflow_db, tiny_model, variants, monkeypatch)
    lake = Lake(str(accelbench_env / "lake"))
    runs = _interleaved(lake, ("a", "b"))
    assert {r["engine_args"] for r in runs if r["variant"] == "b"} == {f"--enforce-eager {SLOWER}"}

    (row,) = summary["ab"]  # b against a at the one level
    assert (row["baseline"], row["variant"], row["level_value"]) == ("a", "b", float(LEVEL))
    assert row["repeats_baseline"] == row["repeats_variant"] == REPEATS
    assert "engine args" in row["differs"] and SLOWER in row["differs"]
    assert row["ab_verdict"] == "differs", [row[f"{m}_finding"] for m in METRICS]
    # The slowdown: throughput down and TTFT up, flagged as regressions (q <= 0.05, beyond 5%), each with an
    # interval that excludes 0 and holds its estimate.
    for metric, worse in (("output_throughput", -1), ("p50_ttft_ms", 1)):
        low, change, high = (row[f"{metric}_{s}"] for s in ("change_low", "change", "change_high"))
        assert row[f"{metric}_verdict"] == "regression", row[f"{metric}_finding"]
        assert low <= change <= high and row[f"{metric}_q"] <= 0.05, row[f"{metric}_finding"]
        assert (high < 0) if worse < 0 else (low > 0), row[f"{metric}_finding"]
    assert row["output_throughput_change"] < -0.2, row["output_throughput_finding"]  # 2 of 8 at once
    assert f"t test, {REPEATS} + {REPEATS} repeats of 24+ requests" in row["change_method"]

    # The report: its own section and file, the same verdict.
    report = run_dag(airflow_db, "accelbench_cross_tier_report", {"slos": {"ttft_p99_ms": 60_000}})
    assert task_states(report) == {"report": "success"}
    (folder,) = lake.fs.ls(lake.path("reports"))
    (shown,) = pq.read_table(Path(folder, "ab_comparisons.parquet")).to_pylist()
    assert shown["ab_verdict"] == "differs" and shown["output_throughput_verdict"] == "regression"
    html = Path(folder, "report.html").read_text()
    table = html[html.index('id="ab-table"') : html.index("</table>", html.index('id="ab-table"'))]
    assert "A/B comparisons" in html and "a vs b" in table and "regression" in table


def test_an_aa_campaign_flags_nothing(
    airflow_db, tiny_model: Path, vllm_python: Path, accelbench_env: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    _, summary = _campaign(airflow_db, tiny_model, [{"name": "a"}, {"name": "a-again"}], monkeypatch)
    lake = Lake(str(accelbench_env / "lake"))
    runs = _interleaved(lake, ("a", "a-again"))
    assert len({r["matrix_key"] for r in runs if r["variant_round"] == 0}) == 1  # the same server and load

    (row,) = summary["ab"]
    assert row["differs"].startswith("nothing (A/A")
    findings = [row[f"{m}_finding"] for m in METRICS]
    assert row["ab_verdict"] in ("no difference", "undecided"), findings
    for metric in METRICS:
        assert row[f"{metric}_verdict"] in ("no change", "undecided"), findings
        assert row[f"{metric}_q"] is not None and row[f"{metric}_q"] > 0.05, findings
        # Undecided says what the samples resolve: "no change beyond +-X%".
        if row[f"{metric}_verdict"] == "undecided":
            assert "no change beyond" in row[f"{metric}_finding"], findings
