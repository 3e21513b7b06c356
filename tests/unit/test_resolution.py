"""How much to measure (issue 29): the spread of a figure between repeats, the smallest change the gate's
test resolves with a given number of repeats, and the report's table that says it per point."""

from __future__ import annotations

import math

import numpy as np
import pytest
from accelbench.core.changes import (
    Spread,
    repeat_spread,
    repeats_change,
    repeats_to_resolve,
    resolvable,
)
from accelbench.report.records import records
from accelbench.report.tables.resolution import resolution
from scipy import stats


def test_what_repeats_resolve_is_the_half_width_of_the_gates_interval_by_scipys_t() -> None:
    spread = Spread(log_sd=0.1, df=10, repeats=12)
    for repeats in (2, 3, 5, 10):
        half = stats.t.ppf(0.975, 2 * repeats - 2) * 0.1 * math.sqrt(2 / repeats)
        assert resolvable(spread, repeats) == pytest.approx(math.expm1(half))
    assert resolvable(spread, 1) is None  # one repeat per side: the test has no spread of its own


def test_it_predicts_the_interval_the_gate_reports_on_simulated_a_a_pairs() -> None:
    """The gate's own interval (repeats_change) on pairs of points with a known spread: its median
    half-width is what `resolvable` says for that spread (a little less: the sample deviation of a few
    repeats is on average below the true one)."""
    rng = np.random.default_rng(29)
    sd, repeats = 0.12, 3
    predicted = math.log1p(resolvable(Spread(sd, 100, 101), repeats) or 0)
    halves = []
    for _ in range(2000):
        before, after = (np.exp(rng.normal(math.log(100), sd, repeats)) for _ in range(2))
        change = repeats_change(list(before), list(after))
        assert change.low is not None and change.high is not None
        halves.append((math.log1p(change.high) - math.log1p(change.low)) / 2)
    assert 0.8 < float(np.median(halves)) / predicted < 1.02


def test_the_spread_is_pooled_within_campaigns_not_across_them() -> None:
    """A host that was 30% slower in the second campaign is a change between campaigns (the gate's finding),
    not noise between repeats: the spread comes from within each campaign."""
    rng = np.random.default_rng(7)
    sd = 0.05
    first = np.exp(rng.normal(math.log(100), sd, 400))
    second = np.exp(rng.normal(math.log(130), sd, 400))
    spread = repeat_spread([list(first), list(second)])
    assert spread is not None and spread.df == 798 and spread.repeats == 800
    assert spread.log_sd == pytest.approx(sd, rel=0.08)
    assert repeat_spread([[120.0], [None, 80.0]]) is None  # one repeat per group: no spread to see


def test_the_repeats_that_resolve_a_change_are_the_fewest_that_do() -> None:
    spread = Spread(log_sd=0.08, df=6, repeats=8)
    needed = repeats_to_resolve(spread, 0.10)
    assert needed is not None and needed > 2
    assert (resolvable(spread, needed) or 1) <= 0.10 < (resolvable(spread, needed - 1) or 0)
    assert repeats_to_resolve(Spread(log_sd=2.0, df=1, repeats=2), 0.10) is None  # beyond 50 repeats


def _run(run_id: str, campaign: str, p99: float, tokens_s: float) -> dict[str, object]:
    return {
        "run_id": run_id,
        "campaign_id": campaign,
        "p99_ttft_ms": p99,
        "output_throughput": tokens_s,
        "completed": 200,
    }


def test_the_report_says_per_point_what_its_repeats_resolve_and_skips_a_point_measured_once() -> None:
    runs = [
        _run("a0", "c1", 200, 50),
        _run("a1", "c1", 240, 51),
        _run("a2", "c2", 400, 40),  # another campaign on a slower day: not the repeats' spread
        _run("a3", "c2", 480, 41),
        _run("b0", "c1", 300, 30),
    ]
    point = {
        "instance_type": "m8g.xlarge",
        "vllm_version": "0.32.0",
        "model_short": "tiny",
        "workload": "random 32→8",
        "host": "local: x86_64, 2 vCPU",
        "level": "concurrency 4",
        "point_id": "p1",
    }
    points = [point | {"run_ids": ["a0", "a1", "a2", "a3"]}, point | {"point_id": "p2", "run_ids": ["b0"]}]
    rows = records(resolution(points, runs))
    (row,) = rows
    logs = [np.log([200, 240]), np.log([400, 480])]
    sd = math.sqrt(sum(float(((g - g.mean()) ** 2).sum()) for g in logs) / 2)
    expected = math.expm1(stats.t.ppf(0.975, 2) * sd)  # 2 repeats a campaign: sqrt(2 / 2) = 1
    assert (row["campaigns"], row["repeats"], row["requests"]) == (2, 2, 200)
    assert row["p99_ttft_ms_resolves"] == pytest.approx(expected)
    assert row["p99_ttft_ms_resolution"].startswith(
        f"with 2 repeats of 200 requests, p99 TTFT changes under ±{expected:.0%} cannot be told from noise"
    )
    assert "takes" in row["p99_ttft_ms_resolution"] and "repeats" in row["output_throughput_resolution"]
