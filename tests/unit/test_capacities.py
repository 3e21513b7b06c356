"""A load search in the lake (issue 18), without a server: each probe a `runs` row marked with its step
and phase, the search's result one `capacities` row beside them, and no capacity of an earlier attempt
left behind by one without a search result."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from accelbench.core.evidence import Envelope, LevelRecord
from accelbench.core.price import Price
from accelbench.core.search_plan import ProbeResult, RepeatResult, SearchPlan, SearchResult
from accelbench.core.slos import Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import Provenance, capacity_row, ingest, ingest_raw
from accelbench.lake.raw import ENVELOPE, RawLocation
from accelbench.lake.rows import CapacityRow, RowError, capacities_table
from accelbench.lake.schemas import CAPACITIES, RUNS, SCHEMA_VERSION, TRACE_COLUMNS
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report
from accelbench.report.capacity_planner import plan_capacity
from accelbench.report.html import render_html
from accelbench.search.load_search import run_search

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
        "host_accelerators": None,
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
        # The SLOs the capacity holds (PLAN's: TTFT only, and the default error rate) and how it held them.
        "slo_ttft_p99_ms": 60.0,
        "slo_tpot_p99_ms": None,
        "slo_e2el_p99_ms": None,
        "slo_max_error_rate": 0.01,
        "repeats": 1,
        "min_requests": 100,
        "model_origin": None,  # a model-store id: no provenance file to read
        "model_path": None,  # named by its id, not served from a folder
        "stopped_why": None,
        "capacity_low": None,  # the point rule: no interval (the interval rule: test_search_intervals)
        "capacity_high": None,
        "capacity_method": None,
        **{name: None for name, _ in TRACE_COLUMNS},  # not a trace's headroom search
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
    # The SLOs the capacity holds are the search's own (PLAN: p99 TTFT 60 ms, the default error rate).
    assert shown["search_slos"] == "p99 TTFT <= 60 ms, error rate <= 1%"
    assert build_report([], [], [], ReportFilter(tiers=["neuron"]), capacities)["capacities"] == []
    when = datetime(2026, 1, 2, tzinfo=UTC)
    page = render_html("r", tables, flt, 0, when)
    assert "Capacity under the SLOs" in page and 'id="capacity-table"' in page and "[5, 6]" in page
    assert "p99 TTFT &lt;= 60 ms, error rate &lt;= 1%" in page
    without = render_html("r", build_report([], [], [], flt), flt, 0, when)
    assert ">Capacity under the SLOs</h2>" not in without and 'id="capacity-table"' not in without


# Priced at the capacity (issue 18, the report side): a search on m8g.xlarge in kubernetes mode, two repeats
# per probe, the server holding p99 TTFT <= 60 ms up to concurrency 5. Its runs, capacity and the raw
# results they come from go through the real ingest into a lake, and the report reads them back.
RUN_DAY = "2026-01-02"
PRICED = [
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.40, datetime(2025, 12, 1, tzinfo=UTC), "snapshot"),
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.80, datetime(2026, 2, 1, tzinfo=UTC), "api"),  # later
    Price("m8g.xlarge", "us-east-1", "spot", 0.12, datetime(2025, 12, 20, tzinfo=UTC), "spot history"),
]
ON_INSTANCE = {
    "execution_mode": "kubernetes",
    "host_instance_type": "m8g.xlarge",
    "host_cpu_model": "Graviton4",
}
ON_LAPTOP = {
    "execution_mode": "local",
    "host_instance_type": None,
    "host_cpu_model": "Apple M3",
    "host_vcpus": 8,
}
# (request/s, output tokens/s, total tokens/s) per repeat at the capacity; elsewhere they grow with the load.
AT_FIVE = {0: (2.0, 60.0, 140.0), 1: (3.0, 100.0, 180.0)}


def _bench_result(rps: float, out: float, total: float, ttft: float) -> dict[str, Any]:
    """A `vllm bench serve` result with the aggregates the lake keeps (no per-request lists)."""
    return {
        "duration": 100.0,
        "completed": 200,
        "failed": 0,
        "total_input_tokens": 1600,
        "total_output_tokens": 800,
        "request_throughput": rps,
        "output_throughput": out,
        "total_token_throughput": total,
        "p99_ttft_ms": ttft,
        **{k: [] for k in ("ttfts", "latencies", "itls", "input_lens", "output_lens")},
    }


def _measured(load: float, repeat: int) -> dict[str, Any]:
    ttft = 50.0 if load <= CAPACITY else 100.0
    rps, out, total = AT_FIVE[repeat] if load == CAPACITY else (0.5 * load, 16.0 * load, 30.0 * load)
    return _bench_result(rps, out, total, ttft)


def _land_evidence(
    lake: Lake,
    load: LoadPlan,
    campaign: str,
    levels: list[tuple[str, float, int, int | None, str | None]],
    measured: Callable[[float, int], dict[str, Any]],
    search: SearchResult | None,
    host: dict[str, Any],
) -> None:
    """One spec's raw evidence (envelope and a result file per level x repeat) into the lake, ingested as
    the DAG does: `levels` are (kind, load, repeat, search step, search phase)."""
    server = tiny_spec("org/model").model_copy(update={"instance_type": "m8g.xlarge"})
    spec = BenchmarkSpec(server=server, load=load, campaign_id=campaign)
    records = [
        LevelRecord(
            run_id=f"{campaign}/{spec.spec_id}/{kind}{value:g}-r{repeat}",
            level_kind=kind,
            level_value=value,
            repeat=repeat,
            seed=1,
            status="ok",
            result_file=f"{kind}{value:g}-r{repeat}.json",
            started_at=f"{RUN_DAY}T00:00:00+00:00",
            search_step=step,
            search_phase=phase,
        )
        for kind, value, repeat, step, phase in levels
    ]
    where = RawLocation("cpu", RUN_DAY, campaign, spec.spec_id)
    for record in records:
        result = measured(record.level_value, record.repeat)
        lake.put_bytes(json.dumps(result).encode(), *where.parts, str(record.result_file))
    envelope = Envelope(
        spec=spec,
        spec_id=spec.spec_id,
        loadgen_version="test",
        server={"version": {"version": "0.32.0"}},
        levels=records,
        search=search,
    )
    lake.put_bytes(json.dumps(envelope.model_dump(mode="json")).encode(), *where.parts, ENVELOPE)
    ingest_raw(lake, where, f"manual__{campaign}", **host)


def _land_search(
    lake: Lake,
    plan: SearchPlan,
    campaign: str,
    host: dict[str, Any],
    verdict: Callable[[float], RepeatResult] | None = None,
) -> SearchResult:
    """A search run by the real `run_search`, every probe's repeats landed with `_measured`'s numbers."""

    def probe(load: float) -> ProbeResult:
        if verdict is not None:
            return ProbeResult(load=load, repeats=(verdict(load),) * plan.repeats)
        ttft = 50.0 if load <= CAPACITY else 100.0
        repeat = RepeatResult(completed=200, p99_ttft_ms=ttft, duration_s=100.0)
        return ProbeResult(load=load, repeats=(repeat,) * plan.repeats)

    result = run_search(plan, probe)
    levels = [
        (plan.level_kind, p.load, r, p.step, p.phase) for p in result.probes for r in range(plan.repeats)
    ]
    load = LoadPlan(input_len=8, output_len=4, prompts_per_level=200, repeats=plan.repeats, search=plan)
    _land_evidence(lake, load, campaign, levels, _measured, result, host)
    return result


def _report(lake: Lake, flt: ReportFilter) -> dict[str, list[dict[str, Any]]]:
    runs, capacities = lake.read("runs").to_pylist(), lake.read("capacities").to_pylist()
    return build_report(runs, PRICED, [], flt, capacities)


def _html_table(page: str, table_id: str) -> list[dict[str, str]]:
    """A table of the page as {machine column name: cell text} per row."""
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', page, re.S)
    assert table is not None, table_id
    columns = re.findall(r'<th scope="col" title="([^"]+)">', table[1])
    rows = re.findall(r"<tr>(.*?)</tr>", table[1].split("<tbody>", 1)[1], re.S)
    return [dict(zip(columns, re.findall(r"<td[^>]*>(.*?)</td>", row, re.S), strict=True)) for row in rows]


def test_the_capacity_is_priced_from_its_probe_on_the_instance_and_not_on_a_laptop(tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    plan = PLAN.model_copy(update={"repeats": 2, "min_requests": 200})
    searched = _land_search(lake, plan, "priced", ON_INSTANCE)
    assert (searched.outcome, searched.capacity, searched.passing, searched.failing) == ("capacity", 5, 5, 6)
    _land_search(lake, plan, "laptop", ON_LAPTOP)
    flt = ReportFilter(ttft_p99_ms=60)
    tables = _report(lake, flt)
    by_host = {row["host"]: row for row in tables["capacities"]}
    priced = by_host["instance"]
    # At concurrency 5 the two repeats measured 2.0 and 3.0 req/s, 60 and 100 output tokens/s, 140 and 180
    # total tokens/s: medians 2.5, 80 and 160. The runs started on 2026-01-02, when on-demand cost
    # 0.40 USD/h (the 0.80 price came after) and spot 0.12 USD/h:
    #   on-demand per 1M output tokens: 0.40 / 3600 s / 80 tokens/s x 10^6 = 1.388889 USD
    #   on-demand per 1M total tokens:  0.40 / 3600 / 160 x 10^6             = 0.694444 USD
    #   spot per 1M output tokens:      0.12 / 3600 / 80 x 10^6              = 0.416667 USD
    #   spot per 1M total tokens:       0.12 / 3600 / 160 x 10^6             = 0.208333 USD
    assert (priced["capacity"], priced["bracket"], priced["search_outcome"]) == (5.0, "[5, 6]", "capacity")
    assert (priced["repeats"], priced["request_throughput"]) == (2, 2.5)
    assert (priced["output_throughput"], priced["total_token_throughput"]) == (80.0, 160.0)
    assert (priced["on_demand_usd_per_hour"], priced["spot_usd_per_hour"]) == (0.40, 0.12)
    assert priced["on_demand_price_source"] == "snapshot, 2025-12-01"
    assert priced["on_demand_usd_per_1m_output_tokens"] == pytest.approx(1.388889, rel=1e-6)
    assert priced["on_demand_usd_per_1m_total_tokens"] == pytest.approx(0.694444, rel=1e-6)
    assert priced["spot_usd_per_1m_output_tokens"] == pytest.approx(0.416667, rel=1e-6)
    assert priced["spot_usd_per_1m_total_tokens"] == pytest.approx(0.208333, rel=1e-5)
    # The laptop's search measured the same numbers, but not on m8g.xlarge: shown, never priced.
    (laptop,) = [row for host, row in by_host.items() if host.startswith("local: ")]
    assert (laptop["capacity"], laptop["request_throughput"], laptop["output_throughput"]) == (5.0, 2.5, 80.0)
    costs = [k for k in laptop if k.endswith(("_usd_per_hour", "_price_source", "_tokens"))]
    assert len(costs) == 8 and all(laptop[k] is None for k in costs)
    # The capacity's point is the report's point at that load: marked for the planner, with its bracket.
    point = next(p for p in tables["points"] if p["point_id"] == priced["point_id"])
    assert (point["level"], point["searched_capacity"]) == ("concurrency 5", "concurrency 5 [5, 6]")
    assert sum(p["searched_capacity"] is not None for p in tables["points"]) == 2  # the laptop's c5 too

    page = render_html("r", tables, flt, 0, datetime(2026, 1, 3, tzinfo=UTC))
    shown = {row["host"]: row for row in _html_table(page, "capacity-table")}
    assert (
        shown["instance"]["request_throughput"] == "2.50" and shown["instance"]["output_throughput"] == "80"
    )
    assert shown["instance"]["on_demand_usd_per_1m_output_tokens"] == "1.39"
    assert shown["instance"]["spot_usd_per_1m_total_tokens"] == "0.2083"
    (local,) = [row for host, row in shown.items() if host.startswith("local: ")]
    assert local["request_throughput"] == "2.50" and local["on_demand_usd_per_1m_output_tokens"] == ""


def test_the_planner_uses_the_searched_capacity_and_a_fixed_level_pools_into_its_point(tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    plan = PLAN.model_copy(update={"repeats": 2, "min_requests": 200})
    _land_search(lake, plan, "priced", ON_INSTANCE)
    # Looser limits than the search's: concurrency 6 and 8 (3.0 and 4.0 req/s, p99 TTFT 100 ms) hold them,
    # but the planner takes the searched capacity, concurrency 5 at 2.5 req/s: ceil(10 / 2.5) = 4 replicas,
    # 4 x 0.40 USD/h x 730 h = 1,168.00 USD a month on-demand, 4 x 0.12 x 730 = 350.40 on spot.
    tables = _report(lake, ReportFilter(ttft_p99_ms=2000))
    (row,) = plan_capacity(tables["points"], 10, ttft_p99_ms=2000)
    assert (row["level"], row["request_throughput"], row["replicas"]) == ("concurrency 5", 2.5, 4)
    assert row["on_demand_usd_per_month"] == pytest.approx(1168.00)
    assert row["spot_usd_per_month"] == pytest.approx(350.40)
    assert (row["searched_capacity"], row["uses_search"]) == ("concurrency 5 [5, 6]", True)
    # Limits tighter than what the capacity measured (p99 TTFT 50 ms > 40): no level holds them.
    assert plan_capacity(tables["points"], 10, ttft_p99_ms=40) == []

    # A fixed-level campaign measures concurrency 5 of the same configuration once more: 10 req/s. The
    # report's point pools its repeats (the mean of 2.0, 3.0, 10.0: 5.0 req/s, report/points.py), and the
    # planner uses that point (ceil(10 / 5) = 2 replicas); the capacities row stays the search's own probe
    # (2.5 req/s).
    fixed = LoadPlan(input_len=8, output_len=4, prompts_per_level=200, concurrency=(5,))
    _land_evidence(
        lake,
        fixed,
        "fixed",
        [("concurrency", 5.0, 0, None, None)],
        lambda *_: _bench_result(10.0, 300.0, 500.0, 50.0),
        None,
        ON_INSTANCE,
    )
    tables = _report(lake, ReportFilter(ttft_p99_ms=2000))
    (capacity,) = tables["capacities"]
    assert (capacity["repeats"], capacity["request_throughput"]) == (2, 2.5)
    (row,) = plan_capacity(tables["points"], 10, ttft_p99_ms=2000)
    assert (row["point_id"], row["request_throughput"], row["replicas"]) == (capacity["point_id"], 5.0, 2)


def test_no_capacity_no_cost_even_where_a_probe_passed(tmp_path) -> None:
    """A client-limited search stops with no capacity: its passing probe is measured, never priced."""
    lake = Lake(str(tmp_path / "lake"))
    plan = SearchPlan(variable="request_rate", lower=1, upper=16, min_requests=100, slos=Slos(ttft_p99_ms=60))

    def verdict(load: float) -> RepeatResult:  # the client cannot send 4 req/s
        return RepeatResult(completed=200, p99_ttft_ms=50.0, client_limited=load >= 4, duration_s=10.0)

    result = _land_search(lake, plan, "limited", ON_INSTANCE, verdict)
    assert (result.outcome, result.capacity, result.passing, result.stopped_at) == (
        "client_limited",
        None,
        2,
        4,
    )
    tables = _report(lake, ReportFilter(ttft_p99_ms=60))
    (row,) = tables["capacities"]
    assert (row["capacity"], row["bracket"]) == (None, "[2, ]")
    assert row["search_outcome"] == (
        "client_limited at 4 req/s: the client could not send the requested load in repeat 1"
    )
    measured = [k for k in ("point_id", "request_throughput", "output_throughput") if row[k] is not None]
    priced = [k for k in row if k.endswith(("_usd_per_hour", "_tokens")) and row[k] is not None]
    assert measured == [] and priced == []
    # The probes are points of the report like any level (the 2 req/s one priced there), none marked.
    at_two = next(p for p in tables["points"] if p["level"] == "2 req/s")
    assert at_two["on_demand_usd_per_1m_output_tokens"] == pytest.approx(0.40 / 3600 / 32 * 1e6)
    assert all(p["searched_capacity"] is None for p in tables["points"])
    (planned,) = plan_capacity(tables["points"], 10, ttft_p99_ms=60)
    assert (planned["searched_capacity"], planned["uses_search"]) == (None, False)
