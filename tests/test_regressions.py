"""The regression gate on constructed lake tables: one clear regression, one change within noise."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from accelbench.catalog.db import make_engine, migrate
from accelbench.lake.schemas import RUNS
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report
from accelbench.report.regressions import describe, regressions_of

NOTIFIED: list[dict[str, Any]] = []


def record(context: dict[str, Any]) -> None:
    """A notifier for the test (ACCELBENCH_REGRESSION_NOTIFIER=tests.test_regressions:record)."""
    NOTIFIED.append(context)


def _runs() -> list[dict[str, Any]]:
    """0.19.0 -> 0.20.0 on m8g.xlarge: c1 loses 30% throughput (repeats within 1%), c4 moves 2%."""
    rows = []
    for version, c1, c4 in (
        ("0.19.0", (100.0, 101.0), (300.0, 303.0)),
        ("0.20.0", (70.0, 70.5), (306.0, 309.0)),
    ):
        for level, values in ((1, c1), (4, c4)):
            for repeat, out in enumerate(values):
                rows.append(
                    {
                        "run_id": f"{version}/c{level}-r{repeat}",
                        "accelerator_type": "cpu",
                        "instance_type": "m8g.xlarge",
                        "model": "org/m",
                        "quantization": None,
                        "vllm_version": version,
                        "level_kind": "concurrency",
                        "level_value": float(level),
                        "repeat": repeat,
                        "status": "ok",
                        "output_throughput": out,
                        "total_token_throughput": out * 2,
                        "p99_ttft_ms": 100.0,
                        "p99_tpot_ms": 10.0,
                        "completed": 200,
                        "accelerator_count": 0,
                        "started_at": datetime(2026, 11, 20, tzinfo=UTC),
                    }
                )
    return rows


def test_a_clear_regression_is_found_and_a_change_within_noise_is_not() -> None:
    points = build_report(_runs(), [], [], ReportFilter())["points"]
    (found,) = regressions_of(points, "0.20.0")
    assert (found["level_value"], found["regressed"]) == (1.0, ["output_throughput"])
    assert found["output_throughput_change"] == pytest.approx((70.25 - 100.5) / 100.5)
    assert "output_throughput -30.1% (noise limit 5.0%)" in describe(found)
    assert regressions_of(points, "0.19.0") == []  # nothing before it


def test_the_gate_logs_reports_notifies_and_can_fail(
    accelbench_env: Path, monkeypatch, caplog, capfd
) -> None:  # type: ignore[no-untyped-def]
    from accelbench.airflow.version_tasks import regression_gate
    from airflow.sdk.exceptions import AirflowFailException

    lake = Lake(str(accelbench_env / "lake"))
    lake.write_table("runs", pa.Table.from_pylist(_runs(), schema=RUNS), "cpu", "2026-11-20", "constructed")
    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    migrate(engine)
    engine.dispose()
    monkeypatch.setenv("ACCELBENCH_VERSION_MATRIX", json.dumps({"model": "org/m"}))
    monkeypatch.setenv("ACCELBENCH_REGRESSION_NOTIFIER", "tests.test_regressions:record")
    NOTIFIED.clear()

    result = regression_gate("0.20.0", {"dag_run": "r"}, fail=False)
    assert len(result["regressions"]) == 1
    assert "concurrency=1: 0.19.0 -> 0.20.0" in result["regressions"][0]
    (note,) = NOTIFIED
    assert note["dag_run"] == "r" and "1 regression(s)" in note["accelbench_regressions"]
    html = Path(result["report"]).read_text()
    assert html.count('class="regression"') == 1  # the report lists it, marked
    assert "regression gate: vLLM CPU 0.20.0: 1 regression(s)" in caplog.text + "".join(capfd.readouterr())

    monkeypatch.setenv("ACCELBENCH_FAIL_ON_REGRESSION", "true")
    with pytest.raises(AirflowFailException, match="1 regression"):
        regression_gate("0.20.0", {})
    assert regression_gate("0.19.0", {})["regressions"] == []  # the first version has nothing to compare
