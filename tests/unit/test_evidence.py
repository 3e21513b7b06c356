"""The evidence contract (core.evidence), the `runs` row model, and the executors' one finish path."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from accelbench import __version__
from accelbench.core.evidence import Envelope, GroupSummary, LevelRecord, RunSummary
from accelbench.core.modes import MODES
from accelbench.core.server_group import ServerGroup
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import RESULT_COLUMNS, ingest_raw
from accelbench.lake.raw import ENVELOPE, EXECUTION, RawEvidenceError, RawLocation, upload_raw
from accelbench.lake.rows import RowError, RunRow, runs_table
from accelbench.lake.schemas import RUNS, reference_markdown
from accelbench.lake.store import Lake
from accelbench.loadgen.finish import finish
from accelbench.local.tiny_model import server_spec
from pydantic import ValidationError

from tests.support.paths import REPO

DATE = "2026-11-30"


def _envelope(*statuses: str) -> Envelope:
    spec = BenchmarkSpec(
        server=server_spec("m"),
        load=LoadPlan(input_len=8, output_len=8, concurrency=(1, 2)),
        campaign_id="ev",
    )
    started = datetime.now(UTC).isoformat()
    levels = [
        LevelRecord(f"ev/{spec.spec_id}/c{i}-r0", "concurrency", i, 0, 0, status, started_at=started)
        for i, status in enumerate(statuses, start=1)
    ]
    failure = next((r.run_id for r in levels if r.status == "failed"), None)
    return Envelope(
        spec=spec,
        spec_id=spec.spec_id,
        attempt="a-1",
        loadgen_version=__version__,
        levels=levels,
        failure=failure,
    )


def test_the_run_row_model_has_exactly_the_runs_columns() -> None:
    assert list(RunRow.model_fields) == RUNS.names
    assert set(RESULT_COLUMNS) < set(RUNS.names)


def test_a_misspelt_or_missing_runs_column_fails_where_the_row_is_built() -> None:
    row = dict.fromkeys(RUNS.names) | {"run_id": "c/s/c1-r0", "status": "ok", "level_value": 1}
    assert runs_table([row]).column("level_value").to_pylist() == [1.0]
    misspelt = {("server_exit_cod" if k == "server_exit_code" else k): v for k, v in row.items()}
    with pytest.raises(
        RowError, match=r"'c/s/c1-r0'.*server_exit_code: Field required.*server_exit_cod: Extra"
    ):
        runs_table([misspelt])
    with pytest.raises(RowError, match="zone: Field required"):
        runs_table([{k: v for k, v in row.items() if k != "zone"}])
    with pytest.raises(RowError, match="repeat: Input should be a valid integer"):
        runs_table([row | {"repeat": "first"}])
    # A row that knows a few columns (an imported file): the others are null, an unknown key still fails.
    (partial,) = runs_table([{"run_id": "i/1", "status": "ok"}], complete=False).to_pylist()
    assert partial["run_id"] == "i/1" and partial["zone"] is None
    with pytest.raises(RowError, match="zonee"):
        runs_table([{"run_id": "i/1", "zonee": "us-east-1a"}], complete=False)


def test_documents_read_as_their_json_and_refuse_unknown_keys() -> None:
    envelope = _envelope("ok", "failed")
    doc = json.loads(envelope.model_dump_json())
    for key in doc:
        assert envelope[key] == doc[key]
    assert envelope["levels"][1]["status"] == "failed" and envelope["spec"]["campaign_id"] == "ev"
    assert Envelope.model_validate(doc) == envelope  # the file reads back as the model written
    with pytest.raises(KeyError):
        envelope["no_such_key"]
    with pytest.raises(ValidationError, match=r"levels\.0\.statuss"):
        Envelope.model_validate(doc | {"levels": [doc["levels"][0] | {"statuss": "ok"}]})
    with pytest.raises(ValidationError, match="Input should be 'running', 'ok', 'errors' or 'failed'"):
        LevelRecord("r", "concurrency", 1, 0, 0, "fine")  # not a level status
    record = envelope.levels[0]
    with pytest.raises(ValidationError):
        record.memory_samples = "many"  # checked on assignment too: the driver fills records in
    assert asdict(record)["run_id"] == record.run_id

    summary = RunSummary.of(envelope)
    assert (summary.spec_id, summary.attempt, summary.failure) == (envelope.spec_id, "a-1", envelope.failure)
    assert [level.status for level in summary.levels] == ["ok", "failed"]
    assert summary["levels"][0]["run_id"] == envelope.levels[0].run_id
    assert RunSummary.model_validate(json.loads(summary.model_dump_json())) == summary


def test_an_envelope_with_a_misspelt_key_is_refused_by_ingest_naming_it(tmp_path: Path) -> None:
    envelope = _envelope("ok")
    doc = json.loads(envelope.model_dump_json())
    doc["levels"][0]["tokens_agreed"] = doc["levels"][0].pop("tokens_agree")
    spec_dir = tmp_path / "raw"
    spec_dir.mkdir()
    (spec_dir / ENVELOPE).write_text(json.dumps(doc))
    lake = Lake(str(tmp_path / "lake"))
    where = RawLocation("cpu", DATE, "ev", envelope.spec_id)
    upload_raw(lake, spec_dir, where)
    with pytest.raises(
        RawEvidenceError, match=r"envelope.json is not a load generator envelope: .*tokens_agreed"
    ):
        ingest_raw(lake, where, "manual__ev", "a-1")


def test_the_finish_path_keeps_the_evidence_and_records_a_lake_that_refused_it(tmp_path: Path) -> None:
    envelope = _envelope("ok", "ok")
    spec_dir = tmp_path / "raw" / envelope.spec_id
    spec_dir.mkdir(parents=True)
    (spec_dir / ENVELOPE).write_text(envelope.model_dump_json())
    (tmp_path / "not-a-dir").write_text("")  # a lake root that cannot hold a folder
    result = finish(envelope, spec_dir, Lake(str(tmp_path / "not-a-dir")), DATE, execution_mode="local")
    assert result.lake_error is not None and result.raw is None
    assert result.lake_error.startswith(f"could not copy the raw evidence to {tmp_path / 'not-a-dir'}")
    assert f"kept in {spec_dir}" in result.lake_error and len(result.levels) == 2
    assert (spec_dir / ENVELOPE).is_file() and json.loads((spec_dir / EXECUTION).read_text()) == {
        "execution_mode": "local"
    }
    lake = Lake(str(tmp_path / "lake"))
    done = finish(envelope, spec_dir, lake, DATE, execution_mode="local")
    assert done.lake_error is None and done.raw == lake.uri_of(
        lake.path(*RawLocation("cpu", DATE, "ev", envelope.spec_id).parts)
    )


class _Recorder:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_has_an_executor_and_the_task_treats_their_summaries_alike(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accelbench.airflow import benchmark_operator
    from accelbench.airflow.benchmark_operator import EXECUTORS, BenchmarkOperator
    from airflow.sdk.exceptions import AirflowFailException

    assert set(EXECUTORS) == set(MODES)
    envelope = _envelope("ok", "failed")
    summaries = {
        "ok": RunSummary.of(_envelope("ok")),
        "failed": RunSummary.of(envelope),
        "lake": RunSummary.of(_envelope("ok")).model_copy(update={"lake_error": "could not copy"}),
    }

    class Fake:
        def __init__(self, summary: RunSummary) -> None:
            self.summary = GroupSummary(runs=[summary])

        def run(self, group: ServerGroup, date: str, attempt: str) -> GroupSummary:
            return self.summary

        def on_kill(self) -> None: ...

    group = ServerGroup(specs=(envelope.spec,))
    op = BenchmarkOperator(task_id="benchmark", group=group, lake_uri=str(tmp_path / "lake"))
    run = SimpleNamespace(logical_date=datetime(2026, 11, 30, tzinfo=UTC), run_after=None)
    for case, summary in summaries.items():
        monkeypatch.setitem(benchmark_operator.EXECUTORS, mode, lambda *_, s=summary: Fake(s))
        ti = _Recorder()
        context = {"dag_run": run, "ti": ti, "params": {"execution_mode": mode}}
        value = GroupSummary(runs=[summary]).model_dump(mode="json")
        if case == "ok":
            assert op.execute(context) == value
        else:
            with pytest.raises(AirflowFailException, match="could not copy" if case == "lake" else "failed"):
                op.execute(context)
            assert ti.pushed["return_value"] == value  # ingest reads each spec's attempt from it


def test_the_lake_schema_page_lists_every_column_as_the_schemas_define_it() -> None:
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "scripts" / "gen_reference.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = gen  # its dataclass looks its module up
    spec.loader.exec_module(gen)
    assert "lake-schema" in {section.name for section in gen.SECTIONS}
    page = (REPO / "docs" / "reference" / "lake-schema.md").read_text()
    body = gen.section_body(page, "lake-schema")
    assert body == reference_markdown(), "stale: run .venv/bin/python scripts/gen_reference.py"
    assert all(f"| `{name}` |" in body for name in RUNS.names)
