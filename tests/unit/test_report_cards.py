"""The answer cards: the runner-up's extra cost and its interval against scipy's own two-sample t interval,
and what changed since the previous report's cards."""

from __future__ import annotations

import math

import numpy as np
import pytest
from accelbench.report.build import ReportFilter, build_report
from scipy import stats

from tests.support.report_data import PRICES, run_row

FLT = ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50)
M8G, R8G = [110.0, 100.0, 120.0], [60.0, 52.0, 58.0]  # output tokens/s of each repeat


def _runs(outs: list[float], instance: str, **kw: object) -> list[dict]:
    return [
        run_row(instance, "cpu", 4, i, out, out * 1.5, 300, 20, run_id=f"{instance}-{i}", **kw)
        for i, out in enumerate(outs)
    ]


def _cards(runs: list[dict], previous: list[dict] | None = None) -> list[dict]:
    return build_report(runs, PRICES, [], FLT, previous=previous or [])["cards"]


def test_the_runner_up_costs_more_by_the_price_ratio_over_the_throughput_ratio_with_scipys_interval() -> None:
    (card,) = _cards(_runs(M8G, "m8g.xlarge") + _runs(R8G, "r8g.large"))
    # m8g.xlarge: 0.20 USD/h (the newest price) at ~110 tokens/s; r8g.large: 0.05 USD/h at ~57 tokens/s.
    assert card["configuration"].startswith("r8g.large") and card["runner_up"].startswith("m8g.xlarge")
    prices = 0.20 / 0.05
    logs = np.log(M8G), np.log(R8G)
    ratio = math.exp(logs[0].mean() - logs[1].mean())  # the runner-up's throughput over the answer's
    ci = stats.ttest_ind(logs[0], logs[1], equal_var=True).confidence_interval(0.95)
    assert card["runner_up_cost_change"] == pytest.approx(prices / ratio - 1)
    assert card["runner_up_cost_change_low"] == pytest.approx(prices / math.exp(ci.high) - 1)
    assert card["runner_up_cost_change_high"] == pytest.approx(prices / math.exp(ci.low) - 1)
    assert card["runner_up_told_apart"] is True  # ~+100%: its interval is well above 0
    assert card["on_demand_usd_per_1m_output_tokens_low"] < card["on_demand_usd_per_1m_output_tokens"]


def test_a_runner_up_within_the_noise_is_not_told_apart() -> None:
    # r8g.large at 0.05 USD/h vs m8g.xlarge at 0.20 USD/h serving 4x the tokens, +-20% between repeats.
    (card,) = _cards(_runs([55, 45, 50], "r8g.large") + _runs([240, 160, 200], "m8g.xlarge"))
    assert card["runner_up_cost_change_low"] < 0 < card["runner_up_cost_change_high"]
    assert card["runner_up_told_apart"] is False


def test_changes_since_the_previous_report_name_the_new_cheapest_and_nothing_when_unchanged() -> None:
    before = _cards(_runs(M8G, "m8g.xlarge"))
    assert before[0]["changes"] == [] and before[0]["previous_report_id"] is None
    previous = [r | {"report_id": "20261201T000000Z"} for r in before]
    (same,) = _cards(_runs(M8G, "m8g.xlarge"), previous)
    assert same["changes"] == [] and same["change_text"] is None
    assert same["previous_report_id"] == "20261201T000000Z"
    (changed,) = _cards(_runs(M8G, "m8g.xlarge") + _runs(R8G, "r8g.large"), previous)
    assert changed["changes"] == ["new cheapest"]
    assert changed["previous_configuration"].startswith("m8g.xlarge")
    assert "Now: r8g.large" in changed["change_text"] and "was: m8g.xlarge" in changed["change_text"]
    assert "(report 20261201T000000Z)" in changed["change_text"]


def test_the_same_answer_a_cost_apart_beyond_both_intervals_and_a_new_price_are_changes() -> None:
    previous = [r | {"report_id": "r0"} for r in _cards(_runs(M8G, "m8g.xlarge"))]
    (slower,) = _cards(_runs([m / 2 for m in M8G], "m8g.xlarge"), previous)
    assert slower["changes"] == ["cost up"]
    repriced = [r | {"on_demand_usd_per_hour": 0.18} for r in previous]
    (card,) = _cards(_runs(M8G, "m8g.xlarge"), repriced)
    assert card["changes"] == ["price change (0.18 -> 0.2 USD/h)"]


def test_nothing_meeting_the_slos_any_more_is_a_change() -> None:
    previous = [r | {"report_id": "r0"} for r in _cards(_runs(M8G, "m8g.xlarge"))]
    (card,) = _cards(_runs(M8G, "m8g.xlarge", p99_ttft_ms=5000.0), previous)
    assert card["configuration"] is None and card["changes"] == ["no answer"]
