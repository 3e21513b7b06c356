"""The regression gate on real measurements (issue 29's acceptance): three campaigns of the Driver with the
real `vllm bench serve` against the zero-work server, landed in a lake with their requests. Two campaigns
of the same server, labelled as two versions, flag nothing at the default false discovery rate (A/A); a
server whose per-token delay is 20% longer is flagged, with the change's interval (A/B).

Deterministic enough beside the other CI lanes: the latencies are the server's configured delays (50 ms to
the first token, 20 ms between tokens) plus the client's and the event loop's jitter, a few ms. A stall of
the unpinned server (up to ~1 s beside a loaded lane, tests/support/zero.py) lands in one repeat's p99, and
one repeat of six cannot make a change: the test is over the repeats' spread, and a minimum effect of 5%.
The three campaigns run at once, each with its own server and runner, so the host's load (the other lanes')
falls on all three alike: run one after another, a busier minute during one of the like campaigns made its
p99 TTFT twice the other's (a CI run: +119% [+24%, +287%], q = 0.05), a real difference of the host's, which
the gate rightly found and which an experiment must not let through (a user compares versions measured on
like hosts, or reads the report's host drift).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import Provenance, ingest
from accelbench.lake.raw import dir_reader
from accelbench.lake.schemas import RUNS
from accelbench.lake.store import Lake
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver
from accelbench.regression.gate import compare
from accelbench.report.records import records
from accelbench.report.tables.version_deltas import CV_METRICS

from tests.support.specs import tiny_spec
from tests.support.zero import zero_server

TTFT_MS, ITL_MS, SLOWER = 50.0, 20.0, 1.2  # the A/B server: +20% per-token delay
# ~3 s of load per repeat, one level: CI stays short. Six repeats, and requests long enough (24 tokens) that
# the slower token moves the throughput by ~15%: with three repeats of 8-token requests (-10%) a run beside
# the other CI lane once left it undecided; with four, so did a clean-clone CI run whose baseline's first
# repeat took ~0.4 s longer than its other three (by the driver's log; alone, a campaign's throughputs lie
# within 0.3% of each other, so that one repeat is the whole spread of the t test). One such repeat, d off,
# of six widens the change's interval 40% less than one of four (half-width 2.23 d / 6 against 2.45 d / 4).
LEVELS, PROMPTS, REPEATS, OUTPUT_LEN = (8,), 48, 6, 24


@dataclass(frozen=True)
class _Matrix:
    keys: set[str]
    unplanned: dict[str, str]


def _campaign(tmp_path: Path, tiny_model: Path, vllm_python: Path, name: str, itl: float):
    load = LoadPlan(
        input_len=16,
        output_len=OUTPUT_LEN,
        concurrency=LEVELS,
        prompts_per_level=PROMPTS,
        warmups=2,
        repeats=REPEATS,
        seed=3,
    )
    spec = BenchmarkSpec(server=tiny_spec(tiny_model), load=load, campaign_id=name)
    vllm = str(vllm_python.parent / "vllm")
    with zero_server(TTFT_MS, itl) as (url, pid), BenchClient(vllm) as client:  # the run's fork server's
        driver = Driver(spec, url, tmp_path / name, vllm=vllm, server_pid=pid, client=client)
        envelope = driver.run()
    assert envelope.failure is None
    return ingest(envelope, dir_reader(driver.spec_dir), Provenance(dag_run_id=name, execution_mode="local"))


def _land(lake: Lake, campaigns: dict[str, Any]) -> None:
    """Each campaign's runs (as the version it stands for) and requests into the lake."""
    for version, ingested in campaigns.items():
        rows = [r | {"vllm_version": version} for r in ingested.runs.to_pylist()]
        assert {r["status"] for r in rows} == {"ok"} and len(rows) == len(LEVELS) * REPEATS
        stem = f"v{version}"
        lake.write_table("runs", pa.Table.from_pylist(rows, schema=RUNS), "cpu", "2026-12-03", stem)
        lake.write_table("requests", ingested.requests, "cpu", "2026-12-03", stem)


def _gate(lake: Lake, version: str):
    """As the gate task calls it (`accelbench.regression.gate.compare`): the runs of the matrix's points, and
    their requests read from the lake."""
    runs = lake.read("runs").to_pylist()
    matrix = _Matrix({r["matrix_key"] for r in runs}, {})
    found = compare(lake, runs, runs[0]["model"], version, lambda versions: matrix)
    ids = [r["run_id"] for r in runs]
    assert len(found.samples.groups(ids, "ttft")) == len(runs)  # every repeat's requests
    return found.verdict


def _repeats(lake: Lake) -> list[tuple[Any, ...]]:
    """Each repeat's figures the gate compares, for a failure's message."""
    rows = sorted(lake.read("runs").to_pylist(), key=lambda r: (r["vllm_version"], r["repeat"]))
    return [(r["vllm_version"], r["repeat"], *(round(r[m], 2) for m in CV_METRICS)) for r in rows]


def test_the_gate_flags_a_20_percent_slower_token_and_nothing_between_like_campaigns(
    tiny_model: Path, vllm_python: Path, tmp_path: Path
) -> None:
    campaigns = (("a", ITL_MS), ("a-again", ITL_MS), ("b", ITL_MS * SLOWER))
    with ThreadPoolExecutor(len(campaigns)) as pool:  # at once: the host's load falls on all three alike
        running = [pool.submit(_campaign, tmp_path, tiny_model, vllm_python, n, itl) for n, itl in campaigns]
        a, a_again, slower = (future.result() for future in running)
    # A/A: the same server twice, as versions 0.31.0 and 0.32.0: no regression at the default FDR.
    same = Lake(str(tmp_path / "a-a"))
    _land(same, {"0.31.0": a, "0.32.0": a_again})
    assert _gate(same, "0.32.0").regressions == []

    # A/B: 20% more per token: p99 TPOT rises ~20% and output throughput falls ~15% (a request takes
    # 50 + 23 x 24 ms instead of 50 + 23 x 20). The level is flagged, each flagged change with an
    # interval that holds it. (Output throughput is the robust one: a stall of the unpinned server beside
    # a loaded lane lands in the p99 TPOT of every request in flight, in one repeat, which can widen that
    # interval past the minimum effect; it never turns the rise into "no change" or an improvement.)
    ab = Lake(str(tmp_path / "a-b"))
    _land(ab, {"0.31.0": a, "0.32.0": slower})
    verdict = _gate(ab, "0.32.0")
    regressions = records(verdict.regressions)  # as the report's files and the notification hold them
    flagged = sorted(r["level_value"] for r in regressions)
    assert flagged == [float(c) for c in LEVELS], (verdict.undecided, _repeats(ab))
    # Where the change lies: +20% per token, and the client's own few ms per token, which the slower server's
    # longer requests also stretch (+23% was seen in CI).
    least, most = -0.25, -0.08
    # How far from no change the throughput's interval may reach and still be tight.
    tight = 0.3
    for found, line in zip(regressions, verdict.lines, strict=True):
        assert "output_throughput" in found["regressed"] and "output tokens/s -" in line, line
        assert "p99_ttft_ms" not in found["regressed"], line  # the first token's delay did not change
        assert found["p99_tpot_ms_verdict"] in ("regression", "undecided"), line
        for metric in found["regressed"]:
            low, change, high = (found[f"{metric}_{s}"] for s in ("change_low", "change", "change_high"))
            assert low <= change <= high and found[f"{metric}_q"] <= 0.05, line
            assert high < -0.05 or low > 0.05, line  # beyond 5%
        low, change, high = (found[f"output_throughput_{s}"] for s in ("change_low", "change", "change_high"))
        assert least < change < most and -tight < low and high < tight, line  # where it lies, and tight
        if "p99_tpot_ms" in found["regressed"]:
            # A p99 of 48 requests is the slowest few in flight: a stall of the unpinned server beside a busy
            # lane lands in one repeat's p99 and moves that repeat by tens of percent, so the point estimate
            # and the width are the CI host's, not the gate's (+26% [+11%, +43%] and +39% [+17%, +64%] were
            # seen in two CI runs, one of them the project's). What the gate claims is its interval: it
            # reaches the change made, +20% per token at the server, which the client's own time per token
            # moves a little either way (alone: "+20% [+19%, +20%]" as the gate rounds it; +23% in CI).
            low, high = found["p99_tpot_ms_change_low"], found["p99_tpot_ms_change_high"]
            assert low <= 0.23 and high >= 0.18, line
        assert f"t test, {REPEATS} + {REPEATS} repeats of {PROMPTS}+ requests" in found["change_method"], line
    assert set(CV_METRICS) >= {m for r in regressions for m in r["regressed"]}
