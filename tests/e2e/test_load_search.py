"""The load search through the real pipeline: the Driver and the real `vllm bench serve` against the
zero-work server made to degrade past a known load, and the evidence it leaves (issue 18)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from accelbench.core.evidence import Envelope
from accelbench.core.search import SearchPlan
from accelbench.core.slos import Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import Provenance, ingest, ingest_raw
from accelbench.lake.raw import RawLocation, dir_reader, upload_raw
from accelbench.lake.store import Lake
from accelbench.loadgen.driver import Driver

from tests.support.paths import REPO
from tests.support.specs import tiny_spec

sys.path.insert(0, str(REPO / "benchmarks"))
from zero_pipeline import zero_server

# Up to DEGRADE_AFTER concurrent requests the server answers in TTFT_MS; each one beyond doubles it (slope
# 1: 1 + (in flight - N)), so from DEGRADE_AFTER + 1 on the TTFT is 2 x TTFT_MS or more. The SLO lies
# half-way between: the capacity is DEGRADE_AFTER exactly, with a margin of TTFT_MS / 2 for the client's
# own delay on either side (100 ms: a p99 of 100 requests is nearly their maximum, and the client on a
# loaded 2-core machine lags by tens of milliseconds now and then; 50 ms was not enough there).
DEGRADE_AFTER, TTFT_MS, ITL_MS, OUTPUT_LEN = 5, 100.0, 5.0, 2
PROMPTS = 100  # per probe: the least a search trusts a p99 from (MIN_P99_REQUESTS); ~30 s of load in all


def test_a_concurrency_search_finds_where_the_server_degrades(
    tiny_model: Path, vllm_python: Path, tmp_path: Path
) -> None:
    plan = SearchPlan(
        variable="concurrency",
        lower=1,
        upper=16,
        min_requests=PROMPTS,
        slos=Slos(ttft_p99_ms=1.5 * TTFT_MS),
    )
    load = LoadPlan(
        input_len=16, output_len=OUTPUT_LEN, prompts_per_level=PROMPTS, warmups=2, seed=3, search=plan
    )
    spec = BenchmarkSpec(server=tiny_spec(tiny_model), load=load, campaign_id="search-campaign")
    with zero_server(TTFT_MS, ITL_MS, degrade_after=DEGRADE_AFTER) as (url, pid):
        driver = Driver(spec, url, tmp_path / "raw", vllm=str(vllm_python.parent / "vllm"), server_pid=pid)
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
