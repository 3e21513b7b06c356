"""A load search that sees the host drift (issue 29): against the zero-work server made 3x slower halfway
through, with the real `vllm bench serve` client, the search's recheck of its first probe disagrees with
it and the result is "drifted" with both figures, never a capacity."""

from __future__ import annotations

from pathlib import Path

from accelbench.core.search import SearchPlan
from accelbench.core.slos import Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import Provenance, capacity_row
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver

from tests.support.specs import tiny_spec
from tests.support.zero import zero_server

# One request in flight answers in TTFT_MS; two are 25x slower (degrade after 1, slope 24: 500 ms): the
# capacity is 1 concurrent. The SLO lies 400 ms above an undegraded TTFT (a stall of the loaded machine
# only adds to it) and below a degraded one. The interval rule needs 368 requests of a repeat to bound a p99
# on both sides: the first probe is measured 4 x 100 requests, the failing one decided from its first 100 (its
# lower bound is over the limit). From the request after SLOW_AFTER (2 warm-ups, 400 at 1, 100 at 2) on,
# the server is SLOW x slower: the recheck of the first probe finds its median TTFT 3x what it was.
TTFT_MS, ITL_MS, OUTPUT_LEN, PROMPTS, SLOW, SLOPE = 20.0, 5.0, 2, 100, 3.0, 24.0
WARMUPS = 2
SLOW_AFTER = WARMUPS + 4 * PROMPTS + PROMPTS


def test_a_search_on_a_host_that_slowed_halfway_is_drifted_not_a_capacity(
    tiny_model: Path, vllm_python: Path, bench_client: BenchClient, tmp_path: Path
) -> None:
    plan = SearchPlan(
        variable="concurrency",
        lower=1,
        upper=2,
        min_requests=PROMPTS,
        max_requests=4 * PROMPTS,
        slos=Slos(ttft_p99_ms=TTFT_MS + 400),
    )
    load = LoadPlan(
        input_len=16, output_len=OUTPUT_LEN, prompts_per_level=PROMPTS, warmups=WARMUPS, seed=3, search=plan
    )
    spec = BenchmarkSpec(server=tiny_spec(tiny_model), load=load, campaign_id="drift-campaign")
    drifting = {"slow_after_requests": SLOW_AFTER, "slow_factor": SLOW}
    with zero_server(TTFT_MS, ITL_MS, degrade_after=1, degrade_slope=SLOPE, **drifting) as (url, pid):
        vllm = str(vllm_python.parent / "vllm")
        driver = Driver(spec, url, tmp_path / "raw", vllm=vllm, server_pid=pid, client=bench_client)
        envelope = driver.run()
    assert envelope.failure is None
    result = envelope.search
    assert result is not None
    probes = [(p.load, p.phase, p.verdict, p.requests) for p in result.probes]
    assert result.outcome == "drifted", (result.summary(), probes)
    assert result.capacity is None and result.capacity_low is None, result.summary()
    assert probes[0][:2] == (1, "bracket") and probes[-1][:2] == (1, "recheck"), probes
    assert result.stopped_why is not None and result.stopped_why.startswith(
        "the host drifted: p50 TTFT at 1 concurrent was "
    ), result.stopped_why
    # Each probe's measurements are levels of their own (their repeats numbered on at one load).
    at_one = [r for r in envelope.levels if r.level_value == 1]
    assert [r.repeat for r in at_one] == list(range(len(at_one))) and len(at_one) == 5
    assert {r.search_phase for r in at_one} == {"bracket", "recheck"}
    row = capacity_row(envelope, Provenance(dag_run_id="manual__drift", execution_mode="local"))
    assert row is not None and (row["outcome"], row["capacity"], row["stopped_at"]) == ("drifted", None, 1.0)
    assert row["stopped_why"] == result.stopped_why
