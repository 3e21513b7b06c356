"""A load search in the lake (issue 18), without a server: each probe a `runs` row marked with its step
and phase, the search's result one `capacities` row beside them, and no capacity of an earlier attempt
left behind by one without a search result."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from accelbench.core.evidence import Envelope, LevelRecord
from accelbench.core.search import ProbeResult, RepeatResult, SearchPlan, SearchResult, run_search
from accelbench.core.slos import Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import Provenance, capacity_row, ingest, ingest_raw
from accelbench.lake.raw import ENVELOPE, RawLocation
from accelbench.lake.rows import CapacityRow, RowError, capacities_table
from accelbench.lake.schemas import CAPACITIES, RUNS, SCHEMA_VERSION
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report
from accelbench.report.html import render_html

from tests.support.specs import tiny_spec

CAPACITY = 5  # the stand-in server meets the SLO up to this concurrency
PLAN = SearchPlan(variable="concurrency", lower=1, upper=16, min_requests=100, slos=Slos(ttft_p99_ms=60))
PROV = Provenance(
    dag_run_id="manual__search",
    execution_mode="local",
    host_cpu_model="Xeon",
    host_vcpus=2,
    host_instance_type="c7i.large",
)


def _searched() -> SearchResult:
    def probe(load: float) -> ProbeResult:
        ttft = 50.0 if load <= CAPACITY else 100.0
        return ProbeResult(
            load=load, repeats=(RepeatResult(completed=100, p99_ttft_ms=ttft, duration_s=2.0),)
        )

    return run_search(PLAN, probe)


def _envelope(search: SearchResult | None) -> Envelope:
    load = LoadPlan(input_len=8, output_len=4, prompts_per_level=100, search=PLAN)
    spec = BenchmarkSpec(server=tiny_spec("m"), load=load, campaign_id="c")
    probes = search.probes if search is not None else ()
    levels = [
        LevelRecord(
            run_id=f"c/{spec.spec_id}/p{p.step}",
            level_kind="concurrency",
            level_value=p.load,
            repeat=0,
            seed=1,
            status="ok",
            started_at="2026-01-02T00:00:00+00:00",
            search_step=p.step,
            search_phase=p.phase,
        )
        for p in probes
    ]
    return Envelope(
        spec=spec,
        spec_id=spec.spec_id,
        loadgen_version="test",
        server={"version": {"version": "0.32.0"}},
        levels=levels,
        search=search,
    )


def test_a_search_lands_its_probes_as_runs_and_its_capacity_as_one_row() -> None:
    result = _searched()
    assert (result.capacity, result.passing, result.failing) == (CAPACITY, 5, 6)
    envelope = _envelope(result)
    ingested = ingest(envelope, lambda _: None, PROV)
    runs = ingested.runs.to_pylist()
    assert [(r["level_value"], r["search_step"], r["search_phase"]) for r in runs] == [
        (p.load, p.step, p.phase) for p in result.probes
    ]
    assert {r["search_phase"] for r in runs} == {"bracket", "bisect"}
    (row,) = ingested.capacities.to_pylist()
    assert row == capacity_row(envelope, PROV)
    assert row == {
        "schema_version": SCHEMA_VERSION,
        "campaign_id": "c",
        "spec_id": envelope.spec_id,
        "dag_run_id": "manual__search",
        "matrix_key": envelope.spec.matrix_key,
        "instance_type": envelope.spec.server.instance_type,
        "accelerator_count": envelope.spec.server.accelerator_count,
        "model": "m",
        "vllm_version": "0.32.0",
        "execution_mode": "local",
        "source_uri": None,
        "host_cpu_model": "Xeon",
        "host_architecture": None,
        "host_vcpus": 2,
        "host_kernel": None,
        "host_instance_type": "c7i.large",
        "measured_on_instance": envelope.spec.server.instance_type == "c7i.large",
        "variable": "concurrency",
        "lower": 1.0,
        "upper": 16.0,
        "precision": "1 concurrent",
        "outcome": "capacity",
        "capacity": 5.0,
        "bracket_passing": 5.0,
        "bracket_failing": 6.0,
        "limiting_metric": "p99 TTFT",
        "stopped_at": None,
        "probes": result.probes_used,
        "server_s": result.server_s,
    }
    assert result.server_s == 2.0 * result.probes_used
    # The configuration columns are the runs rows' own.
    for column in ("campaign_id", "spec_id", "dag_run_id", "matrix_key", "model", "vllm_version"):
        assert {r[column] for r in runs} == {row[column]}, column


def test_fixed_levels_and_a_relative_precision() -> None:
    assert ingest(_envelope(None), lambda _: None, PROV).capacities.num_rows == 0
    plan = SearchPlan(variable="request_rate", lower=1, upper=8, relative=0.05, slos=Slos(ttft_p99_ms=60))
    envelope = _envelope(_searched())
    envelope.search = _searched().model_copy(update={"plan": plan})
    row = capacity_row(envelope, PROV)
    assert row is not None and (row["variable"], row["precision"]) == ("request_rate", "5%")


def test_a_capacity_row_has_exactly_the_schema_s_columns() -> None:
    assert list(CapacityRow.model_fields) == CAPACITIES.names
    row = capacity_row(_envelope(_searched()), PROV)
    assert row is not None
    with pytest.raises(RowError, match=r"capacities row .*limiting_metric: Field required.*limiting: Extra"):
        capacities_table([{k: v for k, v in row.items() if k != "limiting_metric"} | {"limiting": "x"}])


def _land(lake: Lake, envelope: Envelope) -> RawLocation:
    where = RawLocation("cpu", "2026-01-02", envelope.spec.campaign_id, envelope.spec_id)
    lake.put_bytes(json.dumps(envelope.model_dump(mode="json")).encode(), *where.parts, ENVELOPE)
    ingest_raw(lake, where, PROV.dag_run_id)
    return where


def test_the_lake_partitions_capacities_like_runs_and_a_retry_without_a_result_removes_it(tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    searched = _envelope(_searched())
    where = _land(lake, searched)
    (row,) = lake.read("capacities").to_pylist()
    assert (row["accelerator_type"], row["date"], row["capacity"]) == ("cpu", "2026-01-02", 5.0)
    assert row["source_uri"] == lake.uri_of(lake.path(*where.parts, ENVELOPE))
    runs = lake.table_path("runs", "cpu", "2026-01-02", where.stem)
    assert lake.table_path("capacities", "cpu", "2026-01-02", where.stem) == runs.replace(
        "/runs/", "/capacities/"
    )
    # Another attempt of the same spec whose search a failed probe cut short: no result, no capacity.
    cut_short = searched.model_copy(update={"search": None, "failure": "level p3 failed"})
    _land(lake, cut_short)
    assert lake.read("capacities").num_rows == 0 and lake.read("runs").num_rows == len(searched.levels)


def test_older_runs_files_read_the_search_columns_as_null(tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    older = pa.schema([f for f in RUNS if not f.name.startswith("search_")])
    path = lake.table_path("runs", "cpu", "2026-01-02", "old")
    lake.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    pq.write_table(pa.Table.from_pylist([{"run_id": "r", "schema_version": 3}], schema=older), path)
    (row,) = lake.read("runs", columns=["run_id", "search_step", "search_phase"]).to_pylist()
    assert row == {"run_id": "r", "search_step": None, "search_phase": None}


def test_the_report_shows_the_capacities_table_only_when_there_is_a_search(tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    _land(lake, _envelope(_searched()))
    capacities = lake.read("capacities").to_pylist()
    flt = ReportFilter(ttft_p99_ms=60)
    tables = build_report([], [], [], flt, capacities)
    (shown,) = tables["capacities"]
    assert (shown["capacity"], shown["bracket"], shown["limiting_metric"]) == (5.0, "[5, 6]", "p99 TTFT")
    assert (shown["probes"], shown["server_s"]) == (6, 12.0) and shown["host"].startswith("local: ")
    assert build_report([], [], [], ReportFilter(tiers=["neuron"]), capacities)["capacities"] == []
    when = datetime(2026, 1, 2, tzinfo=UTC)
    page = render_html("r", tables, flt, 0, when)
    assert "Capacity under the SLOs" in page and 'id="capacity-table"' in page and "[5, 6]" in page
    without = render_html("r", build_report([], [], [], flt), flt, 0, when)
    assert "Capacity under the SLOs" not in without
