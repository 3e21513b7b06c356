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
from accelbench.lake.ingest import Provenance, ingest
from accelbench.lake.raw import dir_reader
from accelbench.loadgen.driver import Driver

from tests.support.paths import REPO
from tests.support.specs import tiny_spec

sys.path.insert(0, str(REPO / "benchmarks"))
from zero_pipeline import zero_server

# Up to DEGRADE_AFTER concurrent requests the server answers in TTFT_MS; each one beyond doubles it (slope
# 1: 1 + (in flight - N)), so from DEGRADE_AFTER + 1 on the TTFT is 2 x TTFT_MS or more. The SLO lies
# half-way between: the capacity is DEGRADE_AFTER exactly, with a margin of TTFT_MS / 2 for the client's
# own delay on either side.
DEGRADE_AFTER, TTFT_MS, ITL_MS, OUTPUT_LEN = 5, 50.0, 5.0, 2
PROMPTS = 100  # per probe: the least a search trusts a p99 from (MIN_P99_REQUESTS); ~15 s of load in all


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
    # The envelope on disk reads back with its search, and ingest makes one ordinary row per probe (no
    # new columns: RunRow's exact schema check holds).
    written = Envelope.model_validate(json.loads((driver.spec_dir / "envelope.json").read_text()))
    assert written.search == result and written.levels == levels
    prov = Provenance(dag_run_id="manual__search", execution_mode="local")
    runs = ingest(written, dir_reader(driver.spec_dir), prov).runs.to_pylist()
    assert [(r["run_id"], r["level_value"], r["status"]) for r in runs] == [
        (r.run_id, r.level_value, "ok") for r in levels
    ]
