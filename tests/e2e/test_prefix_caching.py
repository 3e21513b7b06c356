"""Prefix caching measured (issue 19): the same shared-prefix workload against two real vLLM CPU servers on
the tiny model, one with `--enable-prefix-caching` (the session's server, whose spec names the flag) and one
with `--no-enable-prefix-caching`, landed in a local lake like any run, and the report's table that pairs
them."""

from __future__ import annotations

import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.core.workloads import Workload
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import RawLocation
from accelbench.lake.store import Lake
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver
from accelbench.loadgen.finish import finish
from accelbench.loadgen.host import host_facts
from accelbench.local.server import LocalServer
from accelbench.report.build import ReportFilter, build_report
from accelbench.report.html import render_html
from accelbench.report.samples import read_samples
from accelbench.report.tables.prefix_caching import PREFIX_CACHING_OFF, PREFIX_CACHING_ON
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.vllm

# One 2,048-token prefix shared by every prompt (the session's server holds 4,096 positions), 32 own tokens
# and 4 out, one request at a time: the prefill of the prefix is most of a request's TTFT, and with
# caching on every request after the first reuses it (the level's prompts share the prefix; the
# warm-up's, from another seed, do not, so the first measured request misses).
PREFIX_LEN, OWN_TOKENS, OUTPUT_LEN, PROMPTS = 2048, 32, 4, 16
WORKLOAD = Workload(
    name="shared-prefix",
    dataset="prefix_repetition",
    prefix_len=PREFIX_LEN,
    input_len=PREFIX_LEN + OWN_TOKENS,
    output_len=OUTPUT_LEN,
    num_prefixes=1,
)
# Measured here (one OpenMP thread per test server, tests/conftest.py): with a 1,024-token prefix the p50 TTFT
# with caching on was 0.22 x the one without alone (7.7 ms vs 34.8 ms), but 0.51 x in a CI run with two other
# lanes beside it (16.7 ms vs 32.8 ms): a cached request's few milliseconds are mostly the server's and the
# client's fixed costs, which a busy host stretches most. A 2,048-token prefix doubles the prefill the cache
# saves. What is asserted is the report's own tested change (an improvement whose interval excludes 0), and a
# ratio below 0.75, which a cache that does nothing (a ratio near 1) fails. No absolute time is asserted.
AT_MOST = 0.75
DAY = "2026-01-02"
COUNTERS = ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total")


def _prefix_cache(url: str) -> dict[str, float]:
    """The server's prefix-cache counters (tokens), summed over their labels. The driver's scrape does
    not record them (loadgen.server_metrics), so the test reads /metrics itself."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out = dict.fromkeys(COUNTERS, 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in out:
                out[sample.name] += sample.value
    return out


def _measure(running: LocalServer, work: Path, lake: Lake, client: BenchClient) -> dict[str, float]:
    """The workload at concurrency 1 against `running`, its evidence into `lake` as a local executor leaves
    it; returns the prefix-cache counters' change over the run."""
    load = LoadPlan(
        input_len=WORKLOAD.input_len,
        output_len=OUTPUT_LEN,
        concurrency=(1,),
        prompts_per_level=PROMPTS,
        warmups=2,
        seed=7,
        workload=WORKLOAD,
    )
    spec = BenchmarkSpec(server=running.spec, load=load, campaign_id="prefix-caching")
    before = _prefix_cache(running.url)
    driver = Driver(
        spec,
        running.url,
        work / "raw",
        vllm=str(client.vllm),
        client=client,
    )
    envelope = driver.run()
    after = _prefix_cache(running.url)
    assert envelope.failure is None, envelope.failure
    assert [r.status for r in envelope.levels] == ["ok"]
    summary = finish(envelope, driver.spec_dir, lake, DAY, execution_mode="local", **host_facts())
    assert summary.lake_error is None, summary.lake_error
    where = RawLocation(running.spec.accelerator_type, DAY, spec.campaign_id, envelope.spec_id)
    assert ingest_raw(lake, where, f"manual__{work.name}") is not None
    return {k: after[k] - before[k] for k in COUNTERS}


def test_a_shared_prefix_has_a_lower_ttft_with_prefix_caching(
    vllm_server: LocalServer, vllm_python: Path, bench_client: BenchClient, tmp_path: Path
) -> None:
    """With caching on: the session's server (tests/support/specs.py's `session_spec` names the flag; no
    other test sends this workload's prefix). With it off: a server of its own, the same spec but that
    flag, pinned like the session's."""
    assert PREFIX_CACHING_ON in vllm_server.spec.extra_engine_args
    assert vllm_server.spec.max_model_len >= WORKLOAD.input_len + OUTPUT_LEN
    lake = Lake(str(tmp_path / "lake"))
    on = _measure(vllm_server, tmp_path / "on", lake, bench_client)
    args = tuple(
        PREFIX_CACHING_OFF if a == PREFIX_CACHING_ON else a for a in vllm_server.spec.extra_engine_args
    )
    spec = vllm_server.spec.model_copy(update={"extra_engine_args": args})
    with LocalServer(
        spec, tmp_path / "off" / "server", python=vllm_python, pinning=vllm_server.pinning
    ) as off_server:
        off = _measure(off_server, tmp_path / "off", lake, bench_client)
    # The server's own account: with caching on the prefix came from the cache (at least half of the
    # prompts' prefix tokens, in full blocks); with it off nothing did.
    hits = "vllm:prefix_cache_hits_total"
    assert on[hits] >= PROMPTS * PREFIX_LEN / 2, on
    assert off[hits] == 0, off

    runs = lake.read("runs").to_pylist()
    assert sorted(r["engine_args"] for r in runs) == sorted(
        f"--enforce-eager {flag}" for flag in (PREFIX_CACHING_ON, PREFIX_CACHING_OFF)
    )
    assert {(r["workload"], r["dataset"], r["prefix_len"], r["completed"]) for r in runs} == {
        ("shared-prefix", "prefix_repetition", PREFIX_LEN, PROMPTS)
    }
    flt = ReportFilter()
    # With the requests of both levels (one repeat each): the change is tested from them (issue 29).
    tables = build_report(runs, [], [], flt, samples=read_samples(lake, [r["run_id"] for r in runs]))
    (pair,) = tables["prefix_caching"]
    p50_on, p50_off = pair["p50_ttft_ms_on"], pair["p50_ttft_ms_off"]
    print(f"p50 TTFT on {p50_on:.1f} ms, off {p50_off:.1f} ms: {p50_on / p50_off:.3f} x")
    assert p50_on < AT_MOST * p50_off, (p50_on, p50_off)
    assert pair["p50_ttft_ms_change"] < -(1 - AT_MOST) and pair["p50_ttft_ms_verdict"] == "improvement"
    finding = pair["p50_ttft_ms_finding"]
    assert pair["p50_ttft_ms_change_high"] < -0.05 and pair["p50_ttft_ms_q"] <= 0.05, finding
    assert "from the requests alone" in pair["change_method"]  # one repeat each: the host's noise unmeasured
    assert pair["engine_args"] == "--enforce-eager" and pair["level"] == "concurrency 1"
    assert pair["host"].startswith("local: ") and pair["workload"].startswith("shared-prefix: ")
    # The page shows the pair in its own table, both TTFTs in it.
    page = render_html("r", tables, flt, len(runs), datetime.now(UTC))
    assert "Prefix caching: TTFT with and without" in page
    start = page.index('id="prefix-caching-table"')
    table = page[start : page.index("</table>", start)]
    for value in (p50_on, p50_off, pair["p99_ttft_ms_on"], pair["p99_ttft_ms_off"]):
        assert f">{value:,.2f}<" in table, (value, table)
    assert "improvement" in table and "shared-prefix: prefix_repetition" in table
