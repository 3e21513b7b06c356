"""The load search through the real pipeline: the Driver and the real `vllm bench serve` against the
zero-work server made to degrade past a known load, and the evidence it leaves (issue 18)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from accelbench.core.evidence import Envelope
from accelbench.core.search_plan import SearchPlan
from accelbench.core.slos import Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.core.workloads import traced
from accelbench.lake.ingest import Provenance, capacity_row, ingest, ingest_raw
from accelbench.lake.raw import RawLocation, dir_reader, upload_raw
from accelbench.lake.store import Lake
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver
from accelbench.report.records import records
from accelbench.report.searches import capacity_rows
from accelbench.report.tables.headroom import headroom_rows
from accelbench.traces.timed_trace import TraceRequest, dumps, identify

from tests.support.airflow_dags import run_dag, task_states
from tests.support.specs import tiny_campaign_conf, tiny_spec
from tests.support.zero import zero_server

# Up to DEGRADE_AFTER concurrent requests the server answers in TTFT_MS; each one beyond adds DEGRADE_SLOPE
# times it (1 + slope x (in flight - N)), so from DEGRADE_AFTER + 1 on the TTFT is 12 x TTFT_MS or more.
# The SLO lies SLO_ABOVE_MS above an undegraded TTFT and well below a degraded one: the capacity is
# DEGRADE_AFTER exactly. A stall of the client or the server only adds to a TTFT, so it cannot pass a degraded
# probe, and a passing probe fails only if two of its 100 requests (its p99 is their second slowest) are held
# back 300 ms (beside a loaded lane the unpinned server was held back more than 0.2 s once in 7 minutes, and
# one pinned beside the other lane's vLLM engines for seconds: tests/support/zero.py). A degraded probe's p99
# (600 ms) is 70% above the SLO: its interval, widened by the host's run-to-run spread (relative, and wide
# when a stall moved the recheck), still lies above it (at 500 ms, 11% above, the test failed one CI run).
DEGRADE_AFTER, TTFT_MS, DEGRADE_SLOPE, ITL_MS, OUTPUT_LEN = 5, 50.0, 11.0, 5.0, 2
SLO_ABOVE_MS = 300.0
PROMPTS = 100  # per probe: the least a search trusts a p99 from (MIN_P99_REQUESTS); ~30 s of load in all


def test_a_concurrency_search_finds_where_the_server_degrades(
    tiny_model: Path, vllm_python: Path, bench_client: BenchClient, tmp_path: Path
) -> None:
    plan = SearchPlan(
        variable="concurrency",
        lower=1,
        upper=16,
        min_requests=PROMPTS,
        slos=Slos(ttft_p99_ms=TTFT_MS + SLO_ABOVE_MS),
    )
    load = LoadPlan(
        input_len=16, output_len=OUTPUT_LEN, prompts_per_level=PROMPTS, warmups=2, seed=3, search=plan
    )
    spec = BenchmarkSpec(server=tiny_spec(tiny_model), load=load, campaign_id="search-campaign")
    with zero_server(TTFT_MS, ITL_MS, degrade_after=DEGRADE_AFTER, degrade_slope=DEGRADE_SLOPE) as (url, pid):
        vllm = str(vllm_python.parent / "vllm")
        driver = Driver(spec, url, tmp_path / "raw", vllm=vllm, server_pid=pid, client=bench_client)
        envelope = driver.run()
    assert envelope.failure is None
    result = envelope.search
    assert result is not None, "a search spec's envelope carries the search's result"
    # Within the stated precision (one step): the bracket is [N, N + 1], so the capacity is N.
    assert result.outcome == "capacity", result.summary()
    assert result.passing is not None and result.failing is not None
    assert plan.precise(result.passing, result.failing), result.summary()
    assert result.passing <= DEGRADE_AFTER < result.failing, result.summary()
    assert result.capacity == DEGRADE_AFTER and result.limiting == "p99 TTFT"
    # Bracket 1, 2, 4, 8 (fails), then bisect 6 (fails), 5: fewer probes than the 16 of a one-step grid.
    assert [p.load for p in result.probes] == [1, 2, 4, 8, 6, 5]
    assert result.probes_used == 6 < len(plan.grid()) and result.server_s > 0
    # Every probe is a level of the envelope, marked with its step and phase, its load the probe's.
    levels = envelope.levels
    assert [(r.search_step, r.search_phase, r.level_value) for r in levels] == [
        (p.step, p.phase, p.load) for p in result.probes
    ]
    assert all(r.status == "ok" and r.level_kind == "concurrency" for r in levels)
    # (tokens_agree is not checked: the zero-work server counts a prompt's words, not its tokens.)
    assert {(r.client_completed, r.client_output_tokens) for r in levels} == {(PROMPTS, PROMPTS * OUTPUT_LEN)}
    # The envelope on disk reads back with its search, and ingest makes one row per probe, marked with
    # its step and phase like the envelope's level.
    written = Envelope.model_validate(json.loads((driver.spec_dir / "envelope.json").read_text()))
    assert written.search == result and written.levels == levels
    prov = Provenance(dag_run_id="manual__search", execution_mode="local")
    ingested = ingest(written, dir_reader(driver.spec_dir), prov)
    runs = ingested.runs.to_pylist()
    assert [
        (r["run_id"], r["level_value"], r["status"], r["search_step"], r["search_phase"]) for r in runs
    ] == [
        (r.run_id, r.level_value, "ok", p.step, p.phase) for r, p in zip(levels, result.probes, strict=True)
    ]
    # Through the lake (raw upload, then ingest_raw): the probes in runs, the search's one row in
    # capacities, in the same partition and file stem as the runs.
    lake = Lake(str(tmp_path / "lake"))
    where = RawLocation("cpu", "2026-01-02", spec.campaign_id, written.spec_id)
    upload_raw(lake, driver.spec_dir, where)
    landed = ingest_raw(lake, where, prov.dag_run_id)
    assert landed is not None
    # (ingest_raw's provenance: no execution.json here, and the envelope's lake URI as the source.)
    where_from = ["execution_mode", "source_uri"]
    assert landed.capacities.drop_columns(where_from).equals(ingested.capacities.drop_columns(where_from))
    lake_runs = lake.read("runs").to_pylist()
    assert sorted((r["search_step"], r["search_phase"]) for r in lake_runs) == [
        (p.step, p.phase) for p in result.probes
    ]
    (row,) = lake.read("capacities").to_pylist()
    assert (row["capacity"], row["bracket_passing"], row["bracket_failing"]) == (DEGRADE_AFTER, 5, 6)
    assert (row["limiting_metric"], row["probes"]) == (result.limiting, result.probes_used)
    assert row["server_s"] == result.server_s and row["outcome"] == "capacity"
    assert (row["variable"], row["precision"]) == ("concurrency", "1 concurrent")
    assert (row["spec_id"], row["campaign_id"], row["dag_run_id"]) == (
        written.spec_id,
        "search-campaign",
        "manual__search",
    )
    assert (row["matrix_key"], row["accelerator_type"], row["date"]) == (spec.matrix_key, "cpu", "2026-01-02")
    assert Path(lake.table_path("capacities", "cpu", "2026-01-02", where.stem)).is_file()


# A request-rate search against the zero server made to degrade past a known rate: from the 40th request of a
# level on, while the level's arrival rate is above KNOWN_RATE, every delay grows x(1 + slope) = x30 (a TTFT
# of 100 ms becomes 3 s). Arrivals are regular (burstiness 1000: gamma gaps with a 3% spread, drawn from
# the level's seed: the same schedule every run). The server judges the rate on its own arrival stamps of
# the requests by their index in the level (zero_server.py, ZeroServer.arrival_rate): `vllm bench serve`
# sends on an absolute schedule, so the requests a stall of the client or of the server held back arrive
# late and together, never early, and counted once they leave the schedule's gaps as they were. So whether
# a probe degrades depends on its rate alone, not on the machine's load (a median of consecutive gaps did:
# a stall's catch-up made short gaps, and a probe 5% below the rate degraded now and then). The SLO, 2 s,
# is 1.9 s above an undegraded TTFT: a stall adds to a passing probe's TTFT (a p99 of 100 requests is
# their second slowest; a loaded 2-core machine was seen to hold the unpinned server back 0.94 s at most),
# and it can only add to a degraded one. (An in-flight count has no sharp threshold in rate: it is rate x
# latency, Little's law, and its tail reaches any count.)
KNOWN_RATE, RATE_TTFT_MS, REGULAR, RATE_SLOPE, RATE_SLO_MS = 20.0, 100.0, 1000.0, 29.0, 2000.0


def _search_zero_server(
    tmp_path: Path,
    tiny_model: Path,
    vllm_python: Path,
    client: BenchClient,
    plan: SearchPlan,
    ttft_ms: float,
    degrade: dict[str, float],
    **load: Any,
) -> Envelope:
    """The Driver's search against the degrading zero server, with the real `vllm bench serve` client."""
    fields = {"input_len": 16, "prompts_per_level": PROMPTS, "warmups": 2, "seed": 3} | load
    spec = BenchmarkSpec(
        server=tiny_spec(tiny_model), load=LoadPlan(**fields, search=plan), campaign_id="search-campaign"
    )
    with zero_server(ttft_ms, ITL_MS, **degrade) as (url, pid):
        vllm = str(vllm_python.parent / "vllm")
        driver = Driver(spec, url, tmp_path / "raw", vllm=vllm, server_pid=pid, client=client)
        return driver.run()


def test_a_request_rate_search_finds_where_the_server_degrades(
    tiny_model: Path, vllm_python: Path, bench_client: BenchClient, tmp_path: Path
) -> None:
    plan = SearchPlan(
        variable="request_rate",
        lower=8,
        upper=64,
        relative=0.1,
        min_requests=PROMPTS,
        slos=Slos(ttft_p99_ms=RATE_SLO_MS),
    )
    envelope = _search_zero_server(
        tmp_path,
        tiny_model,
        vllm_python,
        bench_client,
        plan,
        RATE_TTFT_MS,
        {"degrade_above_rate": KNOWN_RATE, "degrade_slope": RATE_SLOPE},
        output_len=OUTPUT_LEN,
        burstiness=REGULAR,
    )
    assert envelope.failure is None
    result = envelope.search
    assert result is not None and result.outcome == "capacity", result and result.summary()
    assert result.passing is not None and result.failing is not None
    assert plan.precise(result.passing, result.failing), result.summary()  # within 10%
    # The known rate lies in the bracket: above it every request from the 40th on degrades; below it none
    # does (the rate is the schedule's: a stall and its catch-up do not move it).
    probes = [(p.load, p.verdict, round(p.server_s), p.misses) for p in result.probes]
    assert result.passing <= KNOWN_RATE < result.failing, (KNOWN_RATE, result.summary(), probes)
    assert result.limiting == "p99 TTFT" and result.probes_used < len(plan.grid())
    rates = [r for r in envelope.levels if r.level_kind == "rate"]
    assert len(rates) == result.probes_used and all(r.client_limited is False for r in rates)


def test_a_search_the_client_cannot_drive_says_so_instead_of_a_capacity(
    tiny_model: Path, vllm_python: Path, bench_client: BenchClient, tmp_path: Path
) -> None:
    """100,000 req/s is beyond any client process here: the first probe is client-limited, and the search
    stops there with no capacity rather than calling it the server's limit (or its failure)."""
    plan = SearchPlan(variable="request_rate", lower=100_000, upper=200_000, min_requests=PROMPTS)
    plan = plan.model_copy(update={"slos": Slos(ttft_p99_ms=1.5 * TTFT_MS)})
    envelope = _search_zero_server(
        tmp_path, tiny_model, vllm_python, bench_client, plan, TTFT_MS, {}, output_len=OUTPUT_LEN
    )
    assert envelope.failure is None
    result = envelope.search
    assert result is not None
    assert (result.outcome, result.capacity, result.stopped_at) == ("client_limited", None, 100_000)
    assert result.probes_used == 1 and result.passing is None and result.failing is None
    assert "client-limited at 100000 req/s: the client could not send the requested load" in result.summary()
    (level,) = envelope.levels
    assert level.client_limited and level.achieved_rate is not None and level.achieved_rate < 90_000
    # It lands as such: the capacities row says client_limited and where, with no capacity.
    row = capacity_row(envelope, Provenance(dag_run_id="manual__search", execution_mode="local"))
    assert (row["outcome"], row["capacity"], row["stopped_at"]) == ("client_limited", None, 100_000.0)


def test_a_local_campaign_in_search_mode_lands_probes_and_a_capacity_the_report_shows(
    airflow_db, tiny_model: Path, vllm_python: Path, accelbench_env: Path, monkeypatch
) -> None:
    """The form's search fields through the campaign DAG (dag.test()) on the tiny model: one server, the
    search's probes as runs, its capacity as a row, and the report's table. The SLOs are generous, so the
    search passes its upper bound: the outcome is known in advance on any machine (a bracket on a real
    model would depend on this machine's speed; the zero server's test above checks the bisection). The
    point rule: a p99 of one repeat of 100 requests has no upper bound, so the form's default interval rule
    would measure each probe 4 times as long (tests/e2e/test_search_drift.py runs the interval rule, and
    tests/unit/test_search_spec.py the form's default)."""
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    monkeypatch.setenv("ACCELBENCH_VLLM_PYTHON", str(vllm_python))
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    conf = tiny_campaign_conf(tiny_model) | {
        "load_mode": "search",
        "search_lower": 1,
        "search_upper": 4,
        "search_min_requests": PROMPTS,
        "search_rule": "point",
        "prompts_per_level": PROMPTS,
        "slos": {"ttft_p99_ms": 600_000, "tpot_p99_ms": 600_000, "e2el_p99_ms": 600_000},
    }
    run = run_dag(airflow_db, "accelbench_campaign", conf)
    states = task_states(run)
    assert str(run.state) == "success" and states["benchmark"] == "success", states
    lake = Lake(str(accelbench_env / "lake"))
    runs = sorted(lake.read("runs").to_pylist(), key=lambda r: r["search_step"])
    # The form's concurrency levels [1, 2] are not measured: the search chose 1, 2, 4 (x2 to the bound).
    assert [(r["search_step"], r["search_phase"], r["level_value"], r["status"]) for r in runs] == [
        (0, "bracket", 1.0, "ok"),
        (1, "bracket", 2.0, "ok"),
        (2, "bracket", 4.0, "ok"),
    ]
    assert {r["completed"] for r in runs} == {PROMPTS} and {r["dag_run_id"] for r in runs} == {run.run_id}
    (row,) = lake.read("capacities").to_pylist()
    assert (row["outcome"], row["capacity"], row["bracket_passing"], row["bracket_failing"]) == (
        "upper_bound",
        4.0,
        4.0,
        None,
    )
    assert (row["probes"], row["variable"], row["instance_type"]) == (3, "concurrency", "m8g.xlarge")
    assert row["server_s"] == pytest.approx(sum(r["duration_s"] for r in runs))
    assert row["spec_id"] == runs[0]["spec_id"] and row["execution_mode"] == "local"

    report = run_dag(airflow_db, "accelbench_cross_tier_report", {"slos": {"ttft_p99_ms": 600_000}})
    assert task_states(report) == {"report": "success"}
    (folder,) = lake.fs.ls(lake.path("reports"))
    html = Path(folder, "report.html").read_text()
    assert "Capacity under the SLOs" in html
    table = html[
        html.index('id="capacity-table"') : html.index("</table>", html.index('id="capacity-table"'))
    ]
    assert "m8g.xlarge" in table and "upper_bound" in table and "[4, ]" in table


# A headroom search (issue 32): a trace of regular arrivals, TRACE_RATE req/s as recorded, replayed faster
# and faster against the zero server made to degrade above BREAK_RATE (as the request-rate search above): it
# breaks at BREAK_RATE / TRACE_RATE = 2.59 times the recorded traffic, 8% or more from every time-scale the
# search probes on its way at a 20% precision (2, 4, 2.83, 2.38: the server's rate is judged from its own
# arrival stamps, to about 1%; at 10% the search probed 2.59 against a break at 2.71, 4% apart, and a burst
# of sends after a stall on a loaded CI host degraded it once). Each probe replays the whole trace:
# TRACE_REQUESTS, enough for the interval rule to bound a p99 from one repeat (order statistics need 368
# requests for its upper bound), at rates the client keeps (up to 148 req/s). The search rechecks its first
# probe at the end (the interval rule), and two p99s more than 2x apart beyond their intervals are a host
# that drifted: at the request-rate search's 100 ms TTFT a stall of ~150 ms under the first probe was one
# (CI, 2026-12-05: p99 TTFT 275 ms [249, 300] at the start, 106 ms at the end), so here the TTFT is 500 ms,
# x6 when degraded (3 s, as there): only a stall over ~0.6 s drifts it, and the SLO (2 s) still passes a
# stall of up to 1.5 s.
TRACE_RATE, TRACE_REQUESTS, BREAK_RATE = 36.9, 400, 95.7
BREAKS_AT = BREAK_RATE / TRACE_RATE
HEADROOM_TTFT_MS, HEADROOM_SLOPE = 500.0, 5.0


def test_a_headroom_search_finds_the_time_scale_where_the_server_breaks_and_plans_replicas(
    tiny_model: Path, vllm_python: Path, bench_client: BenchClient, tmp_path: Path
) -> None:
    path = tmp_path / "steady.jsonl"
    path.write_text(
        dumps([TraceRequest(i / TRACE_RATE, 16, OUTPUT_LEN, (i,)) for i in range(TRACE_REQUESTS)])
    )
    trace = identify(path.read_text(), "steady", str(path))
    plan = SearchPlan(
        variable="time_scale",
        lower=2,
        upper=16,
        relative=0.2,
        min_requests=PROMPTS,
        max_requests=TRACE_REQUESTS,
        slos=Slos(ttft_p99_ms=RATE_SLO_MS),
    )
    envelope = _search_zero_server(
        tmp_path,
        tiny_model,
        vllm_python,
        bench_client,
        plan,
        HEADROOM_TTFT_MS,
        {"degrade_above_rate": BREAK_RATE, "degrade_slope": HEADROOM_SLOPE},
        output_len=OUTPUT_LEN,
        prompts_per_level=TRACE_REQUESTS,
        workload=traced(trace),
    )
    assert envelope.failure is None, envelope.failure
    result = envelope.search
    assert result is not None and result.outcome == "capacity", result and result.summary()
    assert result.passing is not None and result.failing is not None and result.capacity is not None
    probes = [(p.load, p.verdict, p.misses) for p in result.probes]
    assert plan.precise(result.passing, result.failing), result.summary()  # within 20%
    assert result.passing <= BREAKS_AT < result.failing, (result.summary(), probes)
    # Within its stated interval (the monotone fit of every probe's latencies).
    assert result.capacity_low is not None and result.capacity_high is not None, result.summary()
    assert result.capacity_low <= BREAKS_AT <= result.capacity_high, (result.summary(), probes)
    # Every probe was the whole trace at its time-scale, sent on the trace's schedule.
    scales = [r for r in envelope.levels if r.level_kind == "scale"]
    assert all(r.client_completed == TRACE_REQUESTS and r.client_limited is False for r in scales)
    assert all(r.requested_rate == pytest.approx(TRACE_RATE * r.level_value) for r in scales)
    # The lake's capacities row carries the trace, and the planner turns the headroom into replicas and a
    # month's cost: the hand computation, at an on-demand price stated here (measured on a local host, the
    # row has none that applies).
    row = capacity_row(envelope, Provenance(dag_run_id="manual__headroom", execution_mode="local"))
    assert row is not None and (row["variable"], row["trace_sha256"]) == ("time_scale", trace.sha256)
    shown = records(capacity_rows([row | {"accelerator_type": "cpu"}], [], [], "us-east-1"))
    assert shown[0]["trace"] == trace.words() and shown[0]["capacity"] == result.capacity
    priced = [shown[0] | {"on_demand_usd_per_hour": 0.5, "spot_usd_per_hour": 0.2}]
    for traffic in (1.0, 10.0):
        (planned,) = records(headroom_rows(priced, traffic))
        replicas = math.ceil(traffic / result.capacity)  # e.g. 10x the trace at a headroom of 2.38: 5
        assert planned["replicas"] == replicas
        assert planned["on_demand_usd_per_month"] == pytest.approx(replicas * 0.5 * 730)
        assert planned["spot_usd_per_month"] == pytest.approx(replicas * 0.2 * 730)
        assert planned["replicas_at_low"] == math.ceil(traffic / result.capacity_low)
