"""The capacity planner against hand computations, and its page's JavaScript against plan_capacity.

The points are made by hand in the report model's shape (the fields accelbench.report.capacity_planner reads),
so these tests do not depend on how build_report derives them.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from accelbench.report.capacity_planner import (
    HOURS_PER_MONTH,
    PLANNER_FIELDS,
    Profile,
    left_out,
    plan_capacity,
    planner_context,
    planner_rows,
    planner_schema,
)
from accelbench.report.pages import environment
from accelbench.report.slos import Slos

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, artifacts_dir
from tests.support.servers import missing

HOSTILE = '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


def _pt(cid: str, level: int, rps: float | None, ttft: float, tpot: float, **kw: Any) -> dict[str, Any]:
    """One level of configuration `cid`, priced like m8g.xlarge unless `kw` says otherwise."""
    return {
        "point_id": f"{cid}/c{level}",
        "configuration_id": cid,
        "configuration": f"{cid} · vLLM 0.32.0 · TP1",
        "model": "org/some-model-7b-instruct",
        "model_short": "some-model-7b",
        "workload": "random 128→32",
        "accelerator_type": "cpu",
        "instance_type": cid,
        "vllm_version": "0.32.0",
        "level_kind": "concurrency",
        "level_value": float(level),
        "level": f"concurrency {level}",
        "request_throughput": rps,
        "output_throughput": None if rps is None else rps * 32,
        "p99_ttft_ms": ttft,
        "p99_tpot_ms": tpot,
        "p99_e2el_ms": ttft + 31 * tpot,
        "error_rate": 0.0,
        "measured_on_instance": True,
        "host": cid,
        "on_demand_usd_per_hour": 0.20,
        "spot_usd_per_hour": 0.07,
        "sample_warning": None,
    } | kw


POINTS = [
    _pt("m8g.xlarge", 1, 1.0, 100, 20),
    _pt("m8g.xlarge", 2, 2.5, 500, 35, sample_warning="p99 from 200 requests (< 1000)"),
    _pt("m8g.xlarge", 4, 3.0, 2500, 40),  # the most req/s, beyond a 2000 ms TTFT SLO
    _pt("g6e.xlarge", 16, 36.0, 300, 15, on_demand_usd_per_hour=1.861, spot_usd_per_hour=None),
    _pt(
        "g6e.xlarge", 32, 60.0, 900, 25, error_rate=0.05, on_demand_usd_per_hour=1.861, spot_usd_per_hour=None
    ),
    _pt("c8g.xlarge", 4, 9.0, 200, 20, measured_on_instance=False, host="laptop (Apple M3, arm64)"),
    _pt("c8g.2xlarge", 4, 5.0, 400, 25, on_demand_usd_per_hour=None, spot_usd_per_hour=None),
    _pt("c7g.xlarge", 8, 4.0, 2600, 30, on_demand_usd_per_hour=0.145),
]
SLOS = {"ttft_p99_ms": 2000.0, "tpot_p99_ms": 50.0, "max_error_rate": 0.01}
# Configurations a load search found the capacity of (`searched_capacity`, as the report's builder sets it),
# priced high enough to rank below POINTS' configurations in the page test.
DEAR = {"on_demand_usd_per_hour": 2.00, "spot_usd_per_hour": None}
SEARCHED = [
    _pt("m7g.large", 2, 1.5, 300, 20, **DEAR),
    _pt("m7g.large", 3, 2.0, 600, 25, searched_capacity="concurrency 3 [3, 4]", **DEAR),
    _pt("m7g.large", 4, 3.4, 1900, 45, **DEAR),  # the most req/s within SLOS, but not the searched level
]
TWO_SEARCHES = [
    _pt("m6g.large", 2, 1.0, 300, 10, searched_capacity="concurrency 2 [2, 3]", **DEAR),
    _pt("m6g.large", 3, 1.2, 300, 30, searched_capacity="concurrency 3 [3, 4]", **DEAR),
    _pt("m6g.large", 5, 5.0, 100, 10, **DEAR),
]


def _ci(field: str, low: float | None, high: float | None) -> dict[str, Any]:
    return {f"{field}_low": low, f"{field}_high": high}


# Levels with 95% intervals (accelbench.report.points): judged on them, undecided when a limit is inside.
UNSURE = [
    _pt("m7i.large", 1, 1.0, 400, 18, **_ci("p99_ttft_ms", 350, 460), **_ci("p99_tpot_ms", 15, 22), **DEAR),
    _pt(
        "m7i.large",
        2,
        2.0,
        1700,
        24,
        latency_interval_basis="repeats",
        latency_interval_n=2,
        **_ci("p99_ttft_ms", 1300, 2400),
        **_ci("p99_tpot_ms", 20, 31),
        **DEAR,
    ),
    _pt(
        "m7i.large",
        4,
        3.0,
        1800,
        26,
        latency_interval_basis="requests",
        latency_interval_n=200,
        **_ci("p99_ttft_ms", 1500, None),
        **DEAR,
    ),
    _pt("m5.large", 2, 2.0, 450, 25, **_ci("p99_ttft_ms", 400, 500), **_ci("p99_tpot_ms", 19, 33), **DEAR),
]

DRIFT = (
    "the host drifted: p50 TTFT at 1 concurrent was 21 ms [20, 22] at the start, 64 ms [60, 70] at the end"
)
# A configuration whose host drifted under its campaign (runs.host_drift): each interval alone would meet.
DRIFTED = [
    _pt("m6i.large", 1, 1.0, 100, 10, host_drift=DRIFT, **_ci("p99_ttft_ms", 90, 110), **DEAR),
    _pt("m6i.large", 2, 1.8, 150, 12, host_drift=DRIFT, **_ci("p99_ttft_ms", 140, 160), **DEAR),
]


PASSED = {"quality_gate": "pass", "quality_why": "accuracy 100.0% of the reference's", **DEAR}
FAILED = {"quality_gate": "fail", "quality_why": "mean KL 0.4000 [0.35, 0.45] vs <= 0.1", **DEAR}
GATED = [  # a quantization matrix (priced apart from the others): the faster W4 checkpoint fails the gate
    _pt("m8g.4xlarge", 1, 4.0, 100, 10, **PASSED),
    _pt("c8g.4xlarge", 1, 8.0, 100, 10, **FAILED),
]


def test_a_configuration_that_fails_the_quality_gate_is_left_out_unless_not_required() -> None:
    (kept,) = plan_capacity(GATED, 10, **SLOS)
    assert kept["configuration_id"] == "m8g.4xlarge"
    (gone,) = left_out(GATED, 10, **SLOS)
    assert gone["reason"] == "quality gate fail: mean KL 0.4000 [0.35, 0.45] vs <= 0.1"
    assert [r["configuration_id"] for r in plan_capacity(GATED, 10, **SLOS, require_quality=False)] == [
        "c8g.4xlarge",  # 8 req/s: 2 replicas, cheaper than m8g.4xlarge's 3
        "m8g.4xlarge",
    ]


def test_a_level_whose_host_drifted_is_undecided_and_says_so() -> None:
    assert plan_capacity([{k: v for k, v in p.items() if k != "host_drift"} for p in DRIFTED], 10, **SLOS)
    assert plan_capacity(DRIFTED, 10, **SLOS) == []
    (gone,) = left_out(DRIFTED, 10, ttft_p99_ms=2000)
    said = f"{DRIFT}; measure it again on a steadier host"
    assert gone["reason"] == f"undecided concurrency 1: p99 TTFT 100 ms [90, 110] vs 2000 ms: {said} | " + (
        f"concurrency 2: p99 TTFT 150 ms [140, 160] vs 2000 ms: {said}"
    )
    # The error rate is counted, not estimated: a drifted level over its limit still misses it.
    (gone,) = left_out([DRIFTED[0] | {"error_rate": 0.5}], 10, max_error_rate=0.01)
    assert gone["reason"].startswith("fails error rate (1 of 1 levels)"), gone["reason"]


def test_an_undecided_level_is_never_used_and_says_what_would_decide_it() -> None:
    (row,) = plan_capacity(UNSURE[:3], 10, **SLOS)
    # c2's p99 TTFT interval [1300, 2400] holds the 2000 ms limit, c4's has no upper bound: c1 is used.
    assert (row["level"], row["replicas"]) == ("concurrency 1", 10)
    # The spread of 2 repeats, ln(2400 / 1700) sqrt(2) / t(0.975, 1), leaves 2000 ms out with 3 repeats:
    # t(0.975, 2) x that / sqrt(3) = 0.095 < ln(2000 / 1700) = 0.163.
    assert row["undecided_above"] == (
        "concurrency 2: p99 TTFT 1700 ms [1300, 2400] vs 2000 ms: about 3 repeats (now 2) would decide it | "
        "concurrency 4: p99 TTFT 1800 ms [1500, ?] vs 2000 ms: at least 368 requests per repeat (now 200) "
        "would bound it on both sides, or a second repeat"
    )
    (gone,) = left_out(UNSURE[3:], 10, ttft_p99_ms=450)
    assert gone["reason"] == (
        "undecided concurrency 2: p99 TTFT 450 ms [400, 500] vs 450 ms: the estimate is at the limit: more "
        "measurement narrows the interval but may not decide it"
    )
    assert plan_capacity(UNSURE[3:], 10, ttft_p99_ms=600)  # the whole interval under the limit: it meets


def _summary(rows: list[dict[str, Any]]) -> list[tuple]:
    return [
        (r["rank"], r["configuration_id"], r["point_id"], r["replicas"], r["on_demand_usd_per_month"])
        for r in rows
    ]


def test_replicas_and_monthly_cost_by_hand() -> None:
    rows = plan_capacity(POINTS, 10, **SLOS)
    m8g, g6e, c8g = rows
    # m8g.xlarge: c4 (3.0 req/s) breaks the TTFT SLO; c2 serves 2.5 req/s: ceil(10 / 2.5) = 4 replicas;
    # 4 x 0.20 USD/h x 730 h = 584.00 USD/month on-demand, 4 x 0.07 x 730 = 204.40 on spot;
    # headroom 4 x 2.5 / 10 = 1.00.
    assert (m8g["point_id"], m8g["replicas"]) == ("m8g.xlarge/c2", 4)
    assert m8g["on_demand_usd_per_month"] == pytest.approx(584.00)
    assert m8g["spot_usd_per_month"] == pytest.approx(204.40)
    assert m8g["headroom"] == pytest.approx(1.0)
    assert m8g["sample_warning"] == "p99 from 200 requests (< 1000)"
    # g6e.xlarge: c32 (60 req/s) fails 5% errors > 1%; c16 serves 36 req/s: ceil(10 / 36) = 1 replica;
    # 1 x 1.861 x 730 = 1,358.53 USD/month; no spot price; headroom 36 / 10 = 3.6.
    assert (g6e["point_id"], g6e["replicas"]) == ("g6e.xlarge/c16", 1)
    assert g6e["on_demand_usd_per_month"] == pytest.approx(1358.53)
    assert g6e["spot_usd_per_month"] is None and g6e["headroom"] == pytest.approx(3.6)
    # c8g.2xlarge: 5 req/s, ceil(10 / 5) = 2 replicas, no price: ranked last, with no cost.
    assert (c8g["point_id"], c8g["replicas"], c8g["on_demand_usd_per_month"]) == ("c8g.2xlarge/c4", 2, None)
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert HOURS_PER_MONTH == 730


def test_a_daily_profile_and_scale_to_zero_by_hand() -> None:
    """m8g.xlarge serves 2.5 req/s at c2 (test_replicas_and_monthly_cost_by_hand), 0.20 USD/h on-demand, 0.07
    spot; it starts in 95 s (measured), g6e.xlarge's start-up is unknown."""
    points = [p | {"startup_s": 95.0} if p["configuration_id"] == "m8g.xlarge" else p for p in POINTS]
    # Peak 10 req/s for 6 h, no traffic the other 18 h, scale to zero: 4 replicas x 6 h + 0 x 18 h = 24
    # replica-hours a day; 24 x 0.20 x 730 / 24 = 146.00 USD a month on-demand, 24 x 0.07 x 730 / 24 = 51.10.
    zero = Profile(trough_rps=0.0, peak_hours=6, min_replicas=0, cold_start_limit_s=60)
    m8g, g6e, _ = plan_capacity(points, 10, **SLOS, profile=zero)
    assert (m8g["replicas"], m8g["trough_replicas"]) == (4, 0)
    assert m8g["on_demand_usd_per_month"] == pytest.approx(146.00)
    assert m8g["spot_usd_per_month"] == pytest.approx(51.10)
    assert (m8g["startup_s"], m8g["cold_start_over_limit"]) == (95.0, True)  # scales, starts in 95 s > 60 s
    # g6e.xlarge: 1 replica at the peak (36 req/s), 0 in the trough: 6 x 1.861 x 730 / 24 = 339.63; unknown
    # start-up: no verdict on the cold start.
    assert (g6e["replicas"], g6e["trough_replicas"], g6e["cold_start_over_limit"]) == (1, 0, None)
    assert g6e["on_demand_usd_per_month"] == pytest.approx(339.6325)
    # A trough of 3 req/s for 16 h, at least one replica: m8g 4 x 8 + 2 x 16 = 64 replica-hours a day.
    busy = Profile(trough_rps=3.0, peak_hours=8, min_replicas=1, cold_start_limit_s=120)
    m8g = plan_capacity(points, 10, **SLOS, profile=busy)[0]
    assert (m8g["replicas"], m8g["trough_replicas"], m8g["cold_start_over_limit"]) == (4, 2, False)
    assert m8g["on_demand_usd_per_month"] == pytest.approx(64 * 0.20 * 730 / 24)
    # Never fewer than the minimum: 5 replicas all day, no scaling, no cold start: the steady cost of 5.
    floor = Profile(trough_rps=3.0, peak_hours=8, min_replicas=5, cold_start_limit_s=1)
    m8g = plan_capacity(points, 10, **SLOS, profile=floor)[0]
    assert (m8g["replicas"], m8g["trough_replicas"], m8g["cold_start_over_limit"]) == (5, 5, None)
    assert m8g["on_demand_usd_per_month"] == pytest.approx(5 * 0.20 * 730)
    # The steady plan is the profile-free one, and bad profiles are refused naming what is wrong.
    steady = plan_capacity(points, 10, **SLOS)[0]
    assert (steady["trough_replicas"], steady["cold_start_over_limit"], steady["startup_s"]) == (
        None,
        None,
        95.0,
    )
    for bad, why in (
        (Profile(11.0, 8), "trough rate"),
        (Profile(1.0, 0), "hours at the peak"),
        (Profile(1.0, 25), "hours at the peak"),
        (Profile(1.0, 8, min_replicas=1.5), "minimum replicas"),  # type: ignore[arg-type]
        (Profile(1.0, 8, cold_start_limit_s=-1), "cold-start limit"),
    ):
        with pytest.raises(ValueError, match=why):
            plan_capacity(points, 10, **SLOS, profile=bad)


def test_left_out_says_why() -> None:
    gone = {e["configuration_id"]: e["reason"] for e in left_out(POINTS, 10, **SLOS)}
    # c8g.xlarge would be the cheapest (9 req/s, 2 replicas) but ran on a laptop: its price does not apply.
    assert gone == {
        "c8g.xlarge": "not priced: measured on laptop (Apple M3, arm64)",
        "c7g.xlarge": "fails p99 TTFT (1 of 1 levels)",
    }
    everything = {"ttft_p99_ms": 50.0, "max_error_rate": 0.0}
    reasons = {e["configuration_id"]: e["reason"] for e in left_out(POINTS, 10, **everything)}
    assert reasons["g6e.xlarge"] == "fails p99 TTFT (2 of 2 levels), error rate (1 of 2 levels)"
    assert len(plan_capacity(POINTS, 10, **everything)) == 0


def test_a_tighter_slo_picks_a_lower_level_and_reranks() -> None:
    before = _summary(plan_capacity(POINTS, 10, **SLOS))
    after = _summary(plan_capacity(POINTS, 10, **(SLOS | {"tpot_p99_ms": 30.0})))
    assert [r[1] for r in before] == ["m8g.xlarge", "g6e.xlarge", "c8g.2xlarge"]
    # TPOT <= 30 ms: m8g.xlarge falls back to c1 (1.0 req/s): 10 replicas x 0.20 x 730 = 1,460.00 USD,
    # dearer than g6e.xlarge's 1,358.53.
    assert after[0][1:4] == ("g6e.xlarge", "g6e.xlarge/c16", 1)
    assert after[1][1:4] == ("m8g.xlarge", "m8g.xlarge/c1", 10)
    assert after[1][4] == pytest.approx(1460.00)


def test_error_rate_limit_and_no_limit() -> None:
    # Without an error-rate limit g6e.xlarge may use c32 (60 req/s, 5% errors): still 1 replica, headroom 6.
    g6e = next(r for r in plan_capacity(POINTS, 10, 2000, 50) if r["configuration_id"] == "g6e.xlarge")
    assert (g6e["point_id"], g6e["headroom"]) == ("g6e.xlarge/c32", 6.0)
    assert plan_capacity(POINTS, 10, 2000, 50, max_error_rate=0.05)[1]["point_id"] == "g6e.xlarge/c32"  # <=
    # No limits at all: every measured configuration's fastest level; a missing metric fails only a limit.
    assert {r["point_id"] for r in plan_capacity(POINTS, 100)} == {
        "m8g.xlarge/c4",
        "g6e.xlarge/c32",
        "c8g.2xlarge/c4",
        "c7g.xlarge/c8",
    }
    # A latency not measured fails its limit; an error rate not recorded is not held against a level.
    unknown = [p | {"p99_e2el_ms": None, "error_rate": None} for p in POINTS]
    assert plan_capacity(unknown, 10, e2el_p99_ms=10_000) == []
    assert len(plan_capacity(unknown, 10, max_error_rate=0.0)) == 4


def test_a_level_qualifies_exactly_when_the_report_says_it_meets_the_slos() -> None:
    """The planner and the best-level table judge SLOs alike (accelbench.report.slos.Slos)."""
    points = [*POINTS, *(p | {"p99_tpot_ms": None, "error_rate": None} for p in POINTS)]
    limit_sets = itertools.product((None, 450, 2000), (None, 20, 30), (None, 1500), (None, 0.0, 0.01))
    for ttft, tpot, e2el, errors in limit_sets:
        slos = Slos(ttft, tpot, e2el, errors)
        for p in points:
            single = [p | {"configuration_id": "one", "measured_on_instance": True}]
            assert bool(plan_capacity(single, 1, ttft, tpot, e2el, errors)) == (not slos.misses(p)), (p, slos)


def test_a_searched_capacity_is_the_level_used_while_it_holds_the_limits() -> None:
    (row,) = plan_capacity(SEARCHED, 10, **SLOS)
    # c4 serves the most within the limits (3.4 req/s: 3 replicas), but a search found concurrency 3:
    # 2.0 req/s, ceil(10 / 2.0) = 5 replicas, 5 x 2.00 USD/h x 730 h = 7,300.00 USD a month, no spot price;
    # headroom 5 x 2.0 / 10 = 1.0.
    assert (row["point_id"], row["replicas"], row["headroom"]) == ("m7g.large/c3", 5, 1.0)
    assert row["on_demand_usd_per_month"] == pytest.approx(7300.00) and row["spot_usd_per_month"] is None
    assert (row["searched_capacity"], row["uses_search"]) == ("concurrency 3 [3, 4]", True)
    unmarked = [p | {"searched_capacity": None} for p in SEARCHED]
    assert [(r["point_id"], r["replicas"]) for r in plan_capacity(unmarked, 10, **SLOS)] == [
        ("m7g.large/c4", 3)
    ]
    # p99 TPOT <= 22 ms: the capacity (25 ms) misses it, so the fastest level that holds it is used, c2 at
    # 1.5 req/s: ceil(10 / 1.5) = ceil(6.67) = 7 replicas, 7 x 2.00 x 730 = 10,220.00 USD; the bracket is
    # still shown, marked as not used.
    (row,) = plan_capacity(SEARCHED, 10, **(SLOS | {"tpot_p99_ms": 22.0}))
    assert (row["point_id"], row["replicas"]) == ("m7g.large/c2", 7)
    assert row["on_demand_usd_per_month"] == pytest.approx(10220.00)
    assert (row["searched_capacity"], row["uses_search"]) == ("concurrency 3 [3, 4]", False)
    # No level holds the limits: left out as before, whatever was searched.
    assert plan_capacity(SEARCHED, 10, ttft_p99_ms=100) == []
    assert left_out(SEARCHED, 10, ttft_p99_ms=100)[0]["reason"] == "fails p99 TTFT (3 of 3 levels)"


def test_of_two_searched_capacities_the_faster_one_that_holds_the_limits() -> None:
    # Both hold SLOS: c3 (1.2 req/s) over c2 (1.0); c5 (5.0 req/s) is never preferred to a searched level.
    (row,) = plan_capacity(TWO_SEARCHES, 10, **SLOS)
    assert (row["point_id"], row["replicas"], row["searched_capacity"]) == (
        "m6g.large/c3",
        9,  # ceil(10 / 1.2) = ceil(8.33)
        "concurrency 3 [3, 4]",
    )
    (row,) = plan_capacity(TWO_SEARCHES, 10, **(SLOS | {"tpot_p99_ms": 20.0}))  # c3's 30 ms misses
    assert (row["point_id"], row["replicas"], row["uses_search"]) == ("m6g.large/c2", 10, True)
    # p99 TTFT <= 200 ms: only c5 (100 ms) holds it; both searched capacities are shown, unused.
    (row,) = plan_capacity(TWO_SEARCHES, 10, ttft_p99_ms=200)
    assert (row["point_id"], row["replicas"], row["uses_search"]) == ("m6g.large/c5", 2, False)
    assert row["searched_capacity"] == "concurrency 2 [2, 3]; concurrency 3 [3, 4]"


def test_ties_on_demand_go_by_spot_and_unpriced_sink() -> None:
    points = [
        _pt("a", 1, 1.0, 1, 1, spot_usd_per_hour=None),
        _pt("b", 1, 1.0, 1, 1, spot_usd_per_hour=0.09),
        _pt("c", 1, 1.0, 1, 1, spot_usd_per_hour=0.05),
        _pt("d", 1, 1.0, 1, 1, on_demand_usd_per_hour=None, spot_usd_per_hour=0.01),
        _pt("e", 1, 1.0, 1, 1, on_demand_usd_per_hour=0.10),
    ]
    # e: 2 x 0.10 x 730 = 146 on-demand, cheapest; a, b, c: 2 x 0.20 x 730 = 292 each, then by spot
    # (0.05 < 0.09 < none); d has no on-demand price, so it is last despite the cheapest spot.
    assert [r["configuration_id"] for r in plan_capacity(points, 2)] == ["e", "c", "b", "a", "d"]
    assert [r["rank"] for r in plan_capacity(points, 2)] == [1, 2, 3, 4, 5]


def test_replicas_round_up_and_zero_rates_never_qualify() -> None:
    points = [_pt("x", 1, 3.0, 1, 1), _pt("x", 2, 0.0, 1, 1), _pt("y", 1, None, 1, 1)]
    (row,) = plan_capacity(points, 10)
    assert row["replicas"] == 4  # 10 / 3 = 3.33: 3 replicas would serve only 9 req/s
    assert row["headroom"] == pytest.approx(1.2)  # 4 x 3 / 10
    assert left_out(points, 10) == [
        {
            "configuration_id": "y",
            "configuration": "y · vLLM 0.32.0 · TP1",
            "model_short": "some-model-7b",
            "workload": "random 128→32",
            "reason": "fails no request rate (1 of 1 levels)",
        }
    ]
    for bad in (0, -1, math.nan, math.inf):
        with pytest.raises(ValueError, match="above 0"):
            plan_capacity(points, bad)


def test_planner_rows_carry_only_json_safe_fields() -> None:
    rows = planner_rows([POINTS[0] | {"p99_tpot_ms": math.nan, "extra": "not for the page"}])
    assert list(rows[0]) == list(PLANNER_FIELDS) and rows[0]["p99_tpot_ms"] is None
    json.dumps(rows, allow_nan=False)
    assert plan_capacity(planner_rows(POINTS), 10, **SLOS) == plan_capacity(POINTS, 10, **SLOS)


def test_the_page_script_reads_only_fields_of_the_schema_generated_from_the_planner_type() -> None:
    """The page's JavaScript and plan_capacity read one type (`PlannerPoint`): the JSON Schema generated from
    it holds every row the page gets (jsonschema), and every field the script reads of a point (`p.name`,
    and the limits' `p[l.field]`, `p[`${l.field}_low`]`) is one of its properties, so a renamed field fails
    here, not silently in a browser."""
    import jsonschema
    from accelbench.core.slos import LIMITS

    schema = planner_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for row in planner_rows(POINTS):
        jsonschema.validate(row, schema)
    script, _, _ = environment().loader.get_source(environment(), "planner.html.j2")  # type: ignore[union-attr]
    read = set(re.findall(r"\bp\.([a-z][a-z0-9_]*)", script))
    assert read, "the planner's script reads no point field: the pattern no longer matches it"
    assert "l.field" in script and "${l.field}_low" in script and "${l.field}_high" in script
    read |= {f"{limit.field}{side}" for limit in LIMITS for side in ("", "_low", "_high")}
    assert read <= set(schema["properties"]), read - set(schema["properties"])
    assert tuple(schema["properties"]) == PLANNER_FIELDS


def _page(points: list[dict[str, Any]], **defaults: Any) -> str:
    """A small page holding only the planner, rendered as report.html.j2 includes it."""
    shell = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>planner</title>'
        "<style>body { font-family: system-ui, sans-serif; margin: 1.5rem; }"
        " table { border-collapse: collapse; font-size: 0.8rem; } .scroll { overflow-x: auto; }"
        " th, td { border: 1px solid #ddd; padding: 0.25rem 0.45rem; text-align: right; }"
        " td { white-space: nowrap; } td.text { text-align: left; }</style>"
        '</head><body>{% include "planner.html.j2" %}</body></html>'
    )
    return environment().from_string(shell).render(planner=planner_context(points, **defaults))


def test_page_holds_the_data_escaped_and_the_form() -> None:
    html = _page([POINTS[0] | {"configuration": HOSTILE}], target_rps=10, ttft_p99_ms=2000)
    data = re.search(r'<script type="application/json" id="planner-data">(.*?)</script>', html, re.S)
    assert data is not None and "<" not in data[1]  # the label's </script> cannot end the block
    context = json.loads(data[1])
    assert context["rows"][0]["configuration"] == HOSTILE
    assert context["hours_per_month"] == 730 and context["defaults"]["ttft_p99_ms"] == 2000
    for input_id in ("planner-rps", "planner-ttft", "planner-tpot", "planner-e2el", "planner-errors"):
        assert f'id="{input_id}"' in html
    assert 'id="planner-table"' in html and 'id="planner-excluded"' in html
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=", html)  # opens offline


def _table(page: Any) -> list[dict[str, Any]]:
    """The planner table as the browser shows it: ids, numbers (data-value) and texts per row."""
    return page.eval_on_selector_all(
        "#planner-table tbody tr",
        """trs => trs.map(tr => ({
            configuration_id: tr.dataset.configurationId,
            point_id: tr.dataset.pointId,
            texts: [...tr.cells].map(td => td.textContent),
            values: [...tr.cells].map(td => td.dataset.value === undefined ? null : Number(td.dataset.value)),
        }))""",
    )


def test_page_in_chromium_agrees_with_plan_capacity(tmp_path: Path) -> None:
    """The page's JavaScript and plan_capacity give the same table, and an SLO change re-ranks."""
    if not Path(CHROMIUM).is_file() or shutil.which("chromium") is None:
        missing("Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    hostile = _pt("hostile", 1, 1.0, 1, 1, configuration=HOSTILE, spot_usd_per_hour=None)
    points = [*POINTS, *SEARCHED, *TWO_SEARCHES, *UNSURE, *DRIFTED, *GATED, hostile]
    points = [p | {"startup_s": 95.0} if p["configuration_id"] == "m8g.xlarge" else p for p in points]
    page_file = tmp_path / "planner.html"
    page_file.write_text(_page(points, target_rps=10, ttft_p99_ms=2000, tpot_p99_ms=50, max_error_rate=0.01))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.route(
                "**/*",
                lambda route: (
                    route.abort() if not route.request.url.startswith("file:") else route.continue_()
                ),
            )
            page.goto(page_file.as_uri())
            assert page.input_value("#planner-rps") == "10" and page.input_value("#planner-errors") == "1"
            shown = _table(page)
            expected = plan_capacity(points, 10, **SLOS)
            assert [r["point_id"] for r in shown] == [r["point_id"] for r in expected]
            by_id = {r["configuration_id"]: r for r in shown}
            # The hand computation of test_replicas_and_monthly_cost_by_hand, as the page prints it.
            m8g = by_id["m8g.xlarge"]["texts"]
            assert (
                m8g[0] == "1"
                and m8g[4] == "concurrency 2 ⚠"
                and m8g[5:]
                == ["2.5", "4", "584.00", "204.40", "1.00\N{MULTIPLICATION SIGN}", "not searched", "95"]
            )
            # The searched capacity is the level used (test_a_searched_capacity_is_the_level_used_...).
            assert by_id["m7g.large"]["texts"][4:] == [
                "concurrency 3",
                "2",
                "5",
                "7,300.00",
                "no price",
                "1.00\N{MULTIPLICATION SIGN}",
                "concurrency 3 [3, 4]",
                "not measured",
            ]
            assert by_id["g6e.xlarge"]["texts"][6:10] == [
                "1",
                "1,358.53",
                "no price",
                "3.60\N{MULTIPLICATION SIGN}",
            ]
            assert by_id["c8g.2xlarge"]["texts"][7:9] == ["no price", "no price"]
            for row, ref in zip(shown, expected, strict=True):  # the same floats, not just the same text
                values = row["values"]
                assert values[0] == ref["rank"] and values[5:7] == [
                    ref["request_throughput"],
                    ref["replicas"],
                ]
                assert [v for v in values[7:9] if v is not None] == [
                    c for c in (ref["on_demand_usd_per_month"], ref["spot_usd_per_month"]) if c is not None
                ]
                assert values[9] == ref["headroom"] and values[10] is None
                searched = ref["searched_capacity"]
                if searched is not None and not ref["uses_search"]:
                    searched += " (misses these limits: not used)"
                assert row["texts"][10] == (searched or "not searched")
            excluded = page.locator("#planner-excluded li").all_inner_texts()
            assert any(
                "c8g.xlarge" in t and t.endswith("not priced: measured on laptop (Apple M3, arm64)")
                for t in excluded
            )
            assert any(t.endswith("fails p99 TTFT (1 of 1 levels)") for t in excluded)
            assert page.evaluate("window.pwned") is None and HOSTILE in page.inner_text("#planner-table")
            fits = page.evaluate(
                "() => { const t = document.getElementById('planner-table'); return"
                " [t.scrollWidth, t.parentElement.clientWidth, document.documentElement.scrollWidth]; }"
            )
            assert fits[0] <= fits[1] and fits[2] <= 1400, fits
            page.screenshot(path=str(artifacts_dir() / "planner-page.png"), full_page=True)

            # A day: 10 req/s for 8 h, 2 req/s the other 16 h, scale to zero allowed, 60 s to start.
            # m8g.xlarge: 4 replicas at peak, 1 in the trough: 4 x 8 + 1 x 16 = 48 replica-hours a day,
            # x 0.20 x 730 / 24 = 292.00 USD; it starts in 95 s: flagged.
            page.fill("#planner-trough", "2")
            page.fill("#planner-min-replicas", "0")
            page.fill("#planner-cold-start", "60")
            assert page.input_value("#planner-peak-hours") == "8"
            m8g = {r["configuration_id"]: r for r in _table(page)}["m8g.xlarge"]["texts"]
            assert (m8g[6], m8g[7], m8g[11]) == (
                "4 at peak, 1 in the trough",
                "292.00",
                "95 ⚠ over the cold-start limit",
            )
            page.fill("#planner-peak-hours", "25")
            assert page.locator("#planner-table tbody tr").count() == 0
            assert "at most 24" in page.inner_text("#planner-status")
            for field in ("#planner-trough", "#planner-cold-start"):
                page.fill(field, "")
            page.fill("#planner-peak-hours", "8")
            page.fill("#planner-min-replicas", "1")

            page.fill("#planner-tpot", "30")  # m8g.xlarge falls back to c1: 10 replicas, 1,460.00 USD
            shown = _table(page)
            assert [r["configuration_id"] for r in shown[:2]] == ["g6e.xlarge", "m8g.xlarge"]
            assert shown[1]["texts"][6:8] == ["10", "1,460.00"]
            page.fill("#planner-tpot", "22")  # m7g.large's capacity (25 ms) misses it: c2, 7 replicas
            m7g = {r["configuration_id"]: r for r in _table(page)}["m7g.large"]["texts"]
            assert (m7g[4], m7g[6], m7g[10]) == (
                "concurrency 2",
                "7",
                "concurrency 3 [3, 4] (misses these limits: not used)",
            )
            page.fill("#planner-rps", "")
            assert page.locator("#planner-table tbody tr").count() == 0
            assert "above 0" in page.inner_text("#planner-status")

            # The same rule on many inputs: the page's plan() against _plan, ranked and left out alike.
            rows = planner_rows(points)
            # Days: (trough as a share of the target, hours at peak, minimum replicas, cold-start limit)
            days = (None, (0.0, 6, 0, 60), (0.3, 8, 1, None))
            for target, ttft, tpot, e2el, errors, quality, day in itertools.product(
                (0.3, 10, 37, 250),
                (None, 450, 2000),
                (None, 20, 30),
                (None, 1500),
                (None, 0.0, 0.01),
                (True, False),
                days,
            ):
                profile = None if day is None else Profile(target * day[0], day[1], day[2], day[3])
                limits = {
                    "ttft_p99_ms": ttft,
                    "tpot_p99_ms": tpot,
                    "e2el_p99_ms": e2el,
                    "max_error_rate": errors,
                }
                js = page.evaluate(
                    "([rows, t, l, q, d]) => window.accelbenchPlanner.plan(rows, t, l, q, d)",
                    [rows, target, limits, quality, None if profile is None else asdict(profile)],
                )
                expected = plan_capacity(points, target, **limits, require_quality=quality, profile=profile)
                assert js["ranked"] == expected, (target, limits, quality, profile)
                assert js["excluded"] == left_out(points, target, quality, **limits), (
                    target,
                    limits,
                    quality,
                )
        finally:
            browser.close()
