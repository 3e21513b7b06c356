"""The regression gate on constructed lake tables: one clear regression, one change within noise."""

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
from accelbench.report.build import ReportFilter, build_report
from accelbench.report.gate import gate, gate_scope, measured_versions
from accelbench.report.regressions import describe, regressions_of
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


def test_a_clear_regression_is_found_and_a_change_within_noise_is_not() -> None:
    points = build_report(_runs(), [], [], ReportFilter())["points"]
    (found,) = regressions_of(points, "0.20.0")
    assert (found["level_value"], found["regressed"]) == (1.0, ["output_throughput"])
    assert found["output_throughput_change"] == pytest.approx((70.25 - 100.5) / 100.5)
    assert "output_throughput -30.1% (noise limit 5.0%)" in describe(found)
    # Gating 0.19.0 (measured after 0.20.0, e.g. by a backfill) still shows the step into 0.20.0.
    assert [r["to_version"] for r in regressions_of(points, "0.19.0")] == ["0.20.0"]
    assert regressions_of(points, "v0.20.0") == regressions_of(points, "0.20.0")  # spelled either way


def test_a_p99_tpot_rise_beyond_noise_is_a_regression() -> None:
    rows = [gate_run("0.19.0", 1, r, 100.0, tpot=10.0 + r * 0.1) for r in range(2)]
    rows += [gate_run("0.20.0", 1, r, 100.0, tpot=13.0 + r * 0.1) for r in range(2)]
    (found,) = regressions_of(build_report(rows, [], [], ReportFilter())["points"], "0.20.0")
    assert found["regressed"] == ["p99_tpot_ms"] and found["p99_tpot_ms_change"] == pytest.approx(3.0 / 10.05)


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
    assert "concurrency 4: 0.19.0 -> 0.20.0" in line and "output_throughput" in line


def test_a_version_measured_before_the_warmups_ran_apart_is_not_compared_with_one_after() -> None:
    """0.19.0's levels held their warm-ups in the measured window (the server counted 4 requests more than
    the client measured), 0.20.0's did not: not the same measurement, so no delta and no regression."""
    warmed = {"level_warmups": 4, "schema_version": 5, "matrix_key": "matrix"}
    rows = [gate_run("0.19.0", 1, r, 100.0, **warmed, server_request_success=204.0) for r in range(2)]
    rows += [gate_run("0.20.0", 1, r, 60.0, **warmed, server_request_success=200.0) for r in range(2)]
    assert gate(rows, MODEL, _MatrixPoints({"matrix"}), [], "0.20.0").regressions == []
    points = build_report(rows, [], [], ReportFilter())["points"]
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
    assert "concurrency 1: 0.19.0 -> 0.20.0" in line  # c4 is within noise; the other load is not compared
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
