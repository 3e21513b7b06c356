"""The report's two trace tables (issue 32): a replay's shape over time against a hand count, and headroom
planned into replicas and a month's cost per tier, cheapest first, against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from accelbench.report.capacity_planner import HOURS_PER_MONTH
from accelbench.report.records import record, records
from accelbench.report.tables.headroom import headroom_rows
from accelbench.report.tables.traces import BARS, replay_shape, sparkline


def test_a_burst_shows_as_a_tall_bar_under_a_tall_bar() -> None:
    # 12 s of replay in 4 spans of 3 s: one request a second, and a burst of 9 more in the third span, whose
    # requests waited 900 ms for their first token where the others took 50 ms
    starts = np.concatenate([np.arange(0, 12_001, 1000.0), np.linspace(6100, 6900, 9)])
    ttfts = np.concatenate([np.full(13, 50.0), np.full(9, 900.0)])
    shape = record(replay_shape(starts, ttfts, bins=4))
    # arrivals per span (hand count: [0, 3) s: 0, 1, 2; [3, 6): 3, 4, 5; [6, 9): 6, 7, 8 and the burst;
    # [9, 12]: 9, 10, 11, 12), per second of a 3 s span
    assert shape["arrivals_by_time"] == sparkline(np.array([3, 3, 12, 4]) / 3.0)
    assert shape["ttft_by_time"] == sparkline(np.array([50.0, 50.0, 900.0, 50.0]))
    assert shape["arrivals_by_time"][2] == shape["ttft_by_time"][2] == BARS[-1]
    assert shape["busiest_bin"] == "6.0 to 9.0 s: 4 arrivals/s, slowest TTFT 900 ms"
    assert shape["slowest_bin"].startswith("6.0 to 9.0 s: slowest TTFT 900 ms")


def _capacity(tier: str, instance: str, headroom: float, low: float, usd: float | None) -> dict:
    return {
        "search_variable": "time_scale",
        "trace": "day (sha256 abc): 31 requests over 27 s, 1.1 req/s at 1x",
        "accelerator_type": tier,
        "instance_type": instance,
        "capacity": headroom,
        "capacity_low": low,
        "on_demand_usd_per_hour": usd,
        "spot_usd_per_hour": None if usd is None else usd / 3,
    }


def test_headroom_becomes_replicas_and_a_month_per_tier_cheapest_first() -> None:
    rows = [
        _capacity("cpu", "c8g.2xlarge", 0.45, 0.41, 0.319),  # holds under half the traffic: 3 replicas
        _capacity("cpu", "c8g.8xlarge", 1.9, 1.7, 1.276),  # one replica
        _capacity("cpu", "m8g.xlarge", 2.0, 1.8, None),  # measured off its instance type: unpriced
        _capacity("gpu", "g6.xlarge", 12.0, 11.0, 0.805),
        {"search_variable": "concurrency", "capacity": 8},  # not a headroom search
    ]
    planned = records(headroom_rows(rows))
    assert [(r["accelerator_type"], r["instance_type"]) for r in planned] == [
        ("cpu", "c8g.2xlarge"),  # 3 x 0.319 = 0.957 USD/h, below one c8g.8xlarge's 1.276
        ("cpu", "c8g.8xlarge"),
        ("cpu", "m8g.xlarge"),  # unpriced last in its tier
        ("gpu", "g6.xlarge"),
    ]
    small = planned[0]
    assert (
        (small["replicas"], small["replicas_at_low"]) == (math.ceil(1 / 0.45), math.ceil(1 / 0.41)) == (3, 3)
    )
    assert small["on_demand_usd_per_month"] == pytest.approx(3 * 0.319 * HOURS_PER_MONTH)
    assert small["spot_usd_per_month"] == pytest.approx(3 * 0.319 / 3 * HOURS_PER_MONTH)
    assert planned[2]["on_demand_usd_per_month"] is None and planned[2]["replicas"] == 1
    # four times the recorded traffic: ceil(4 / headroom) replicas each
    assert [r["replicas"] for r in records(headroom_rows(rows, traffic=4.0))] == [9, 3, 2, 1]
