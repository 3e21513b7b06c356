"""The report's intervals and three-valued SLO verdicts on small data checked by hand or against scipy:
the request samples, each point's interval, what an undecided level is (never the best) and what decides it.
"""

from __future__ import annotations

import csv
import io
import math
from datetime import UTC, datetime

import numpy as np
import pyarrow.parquet as pq
import pytest
from accelbench.core.intervals import pooled_quantile_interval, quantile_interval
from accelbench.core.sketches import RELATIVE_ACCURACY
from accelbench.lake.ingest import request_table
from accelbench.lake.sketches import sketch_table
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report, gather, write_report
from accelbench.report.capacity_planner import PlannerPoint, left_out, plan_capacity
from accelbench.report.html import render_html
from accelbench.report.points import WITH_INTERVAL, clopper_pearson, level_points
from accelbench.report.records import records
from accelbench.report.samples import Samples, read_samples
from accelbench.report.slos import LIMITS, Slos, best_under_slos, limit_verdict, slo_judgement, to_decide
from scipy import stats

from tests.support.report_data import PRICES, run_row

TTFT = next(limit for limit in LIMITS if limit.field == "p99_ttft_ms")
SLOS = Slos(ttft_p99_ms=2000)


def _rows(run_id: str, ttfts_s: list[float], ok: list[bool] | None = None) -> list[dict]:
    ok = ok or [True] * len(ttfts_s)
    return [
        {"run_id": run_id, "request_index": i, "success": s, "ttft_s": t, "tpot_s": t / 10, "e2el_s": t * 2}
        for i, (t, s) in enumerate(zip(ttfts_s, ok, strict=True))
    ]


def test_samples_keep_successful_requests_in_order_in_milliseconds() -> None:
    rows = _rows("b", [0.3, 0.1], [True, False]) + _rows("a", [0.2, 0.4, 0.1])
    samples = Samples.from_rows(list(reversed(rows)))  # any row order: request_index sorts them
    assert samples.by_run["a"]["ttft"].values.tolist() == pytest.approx([100, 200, 400])  # kept exactly
    assert samples.by_run["b"]["e2el"].values.tolist() == pytest.approx([600])  # the failed one is dropped
    # One distribution per repeat that has samples, in the order asked; an unknown run gives none.
    assert [g.count for g in samples.groups(["b", "imported", "a"], "ttft")] == [1, 3]
    assert Samples.from_rows([]) is Samples.EMPTY and Samples.EMPTY.groups(["a"], "ttft") == []


def test_read_samples_reads_only_the_runs_asked(tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    result = {
        "ttfts": [0.1, 0.2, 0.3],
        "latencies": [1.0, 2.0, 3.0],
        "itls": [[0.1], [0.1, 0.2], []],
        "input_lens": [5, 5, 5],
        "output_lens": [2, 3, 1],
        "errors": ["", "", "boom"],
    }
    lake.write_table("requests", request_table(result, "r1", "c", "s"), "cpu", "2026-11-10", "one")
    lake.write_table("requests", request_table(result, "r2", "c", "s"), "cpu", "2026-11-11", "two")
    samples = read_samples(lake, ["r1"])
    assert list(samples.by_run) == ["r1"]
    assert samples.by_run["r1"]["ttft"].values.tolist() == pytest.approx([100, 200])
    assert samples.by_run["r1"]["tpot"].values.tolist() == pytest.approx(
        [900, 900]
    )  # (e2el - ttft) / (n - 1)
    assert read_samples(lake, []) is Samples.EMPTY


def test_read_samples_reads_a_runs_sketch_not_its_requests(tmp_path) -> None:
    """A run with a sketches row (schema 16 on) is read from it alone; one without, from its requests."""
    lake = Lake(str(tmp_path / "lake"))
    rng = np.random.default_rng(0)
    n = 20_000
    ttfts = 0.1 * np.exp(rng.normal(0, 0.5, n))
    result = {
        "ttfts": ttfts.tolist(),
        "latencies": (ttfts + 0.5).tolist(),
        "itls": [[0.01]] * n,
        "input_lens": [5] * n,
        "output_lens": [2] * n,
        "errors": [""] * n,
    }
    big = request_table(result, "big", "c", "s")
    lake.write_table("sketches", sketch_table(big), "cpu", "2026-11-10", "big")
    small = request_table({k: v[:3] for k, v in result.items()}, "small", "c", "s")
    lake.write_table("requests", small, "cpu", "2026-11-10", "small")  # an older lake: requests, no sketch
    samples = read_samples(lake, ["big", "small"])
    sketched, exact = samples.by_run["big"]["ttft"], samples.by_run["small"]["ttft"]
    assert sketched.count == n and not sketched.exact and sketched.relative_accuracy == RELATIVE_ACCURACY
    assert exact.exact and exact.values.tolist() == pytest.approx(sorted(ttfts[:3] * 1000))
    p99 = pooled_quantile_interval([sketched], 0.99)
    exact_p99 = pooled_quantile_interval([ttfts * 1000], 0.99)
    assert p99.low <= exact_p99.low < exact_p99.high <= p99.high  # the sketch's bounds hold the exact ones
    assert (p99.high - p99.low) < 1.1 * (exact_p99.high - exact_p99.low)
    assert "DDSketches (values within 0.1%)" in p99.method


def _repeats(outs: list[float], ttfts: list[float], **kw) -> list[dict]:
    return [
        run_row("m8g.xlarge", "cpu", 4, i, out, out * 1.5, ttft, 20, run_id=f"r{i}", **kw)
        for i, (out, ttft) in enumerate(zip(outs, ttfts, strict=True))
    ]


def test_throughput_and_cost_intervals_are_the_t_interval_over_repeats() -> None:
    (p,) = records(level_points(_repeats([100, 110, 126], [300, 320, 330]), PRICES, "us-east-1"))
    x = np.array([100, 110, 126])
    low, high = stats.t.interval(0.95, df=2, loc=x.mean(), scale=stats.sem(x))
    assert p["output_throughput"] == pytest.approx(112)  # the mean the interval is for, not the median 110
    assert (p["output_throughput_low"], p["output_throughput_high"]) == pytest.approx((low, high))
    assert p["throughput_interval"] == "t interval over 3 repeats"
    # Cost per 1M output tokens at 0.20 USD/h (in force at the newest repeat): the upper throughput bound
    # gives the lower cost.
    assert p["on_demand_usd_per_hour"] == 0.20
    assert p["on_demand_usd_per_1m_output_tokens_low"] == pytest.approx(0.20 / 3600 / high * 1e6)
    assert p["on_demand_usd_per_1m_output_tokens_high"] == pytest.approx(0.20 / 3600 / low * 1e6)
    assert p["run_ids"] == ["r0", "r1", "r2"]


def test_a_throughput_bound_below_zero_is_zero_and_the_cost_has_no_upper_bound() -> None:
    (p,) = records(level_points(_repeats([10, 200], [300, 320]), PRICES, "us-east-1"))
    assert p["output_throughput_low"] == 0.0 and p["on_demand_usd_per_1m_output_tokens_high"] is None


def test_latency_from_the_repeats_rows_without_samples_says_so() -> None:
    (p,) = records(level_points(_repeats([100, 110, 120], [300, 330, 420]), PRICES, "us-east-1"))
    logs = np.log([300, 330, 420])
    low, high = stats.t.interval(0.95, df=2, loc=logs.mean(), scale=stats.sem(logs))
    assert p["p99_ttft_ms"] == pytest.approx(math.exp(logs.mean()))  # the geometric mean
    assert (p["p99_ttft_ms_low"], p["p99_ttft_ms_high"]) == pytest.approx((math.exp(low), math.exp(high)))
    assert "no request samples" in p["latency_interval"]
    (one,) = records(level_points(_repeats([100], [300]), PRICES, "us-east-1"))
    assert one["p99_ttft_ms"] == 300 and one["p99_ttft_ms_low"] is None and one["p99_ttft_ms_high"] is None
    assert one["latency_interval"] == "1 repeat, no request samples: no interval"


def test_latency_from_request_samples_one_repeat_and_several() -> None:
    rng = np.random.default_rng(7)
    ms = [rng.lognormal(np.log(200), 0.3, 1000) for _ in range(3)]
    rows = [r for i, a in enumerate(ms) for r in _rows(f"r{i}", (a / 1000).tolist())]
    samples = Samples.from_rows(rows)
    (one,) = records(level_points(_repeats([100], [999]), PRICES, "us-east-1", samples))
    ref = quantile_interval(ms[0], 0.99)
    assert (one["p99_ttft_ms"], one["p99_ttft_ms_low"], one["p99_ttft_ms_high"]) == pytest.approx(
        (ref.estimate, ref.low, ref.high)
    )
    assert one["p99_ttft_ms"] == pytest.approx(np.quantile(ms[0], 0.99))  # not the runs row's 999
    assert (one["latency_interval_basis"], one["latency_interval_n"]) == ("requests", 1000)
    # The order statistics bracket the estimate within the sample.
    assert ms[0].min() <= one["p99_ttft_ms_low"] < one["p99_ttft_ms"] < one["p99_ttft_ms_high"] <= ms[0].max()
    (three,) = records(level_points(_repeats([100, 100, 100], [1, 1, 1]), PRICES, "us-east-1", samples))
    ref = pooled_quantile_interval(ms, 0.5)
    assert (three["p50_ttft_ms"], three["p50_ttft_ms_low"], three["p50_ttft_ms_high"]) == pytest.approx(
        (ref.estimate, ref.low, ref.high)
    )
    assert (three["latency_interval_basis"], three["latency_interval_n"]) == ("repeats", 3)
    # A repeat without samples (an imported run beside two measured ones): all from the runs rows.
    mixed = _repeats([100, 100, 100], [300, 330, 420])
    (p,) = records(level_points(mixed, PRICES, "us-east-1", Samples({"r0": samples.by_run["r0"]})))
    assert p["p99_ttft_ms"] == pytest.approx(math.exp(np.log([300, 330, 420]).mean()))


def test_error_rate_is_pooled_with_the_exact_binomial_interval() -> None:
    rows = _repeats([100, 100], [300, 300])
    rows[0] |= {"completed": 195, "failed": 5}
    rows[1] |= {"completed": 200, "failed": 0}
    (p,) = records(level_points(rows, PRICES, "us-east-1"))
    ci = stats.binomtest(5, 400).proportion_ci(0.95, method="exact")
    assert (p["error_rate"], p["error_rate_low"], p["error_rate_high"]) == pytest.approx(
        (5 / 400, ci.low, ci.high)
    )


@pytest.mark.parametrize("n", [1, 7, 400, 10_000, 3_000_000])
def test_the_closed_form_clopper_pearson_is_scipys_exact_interval(n: int) -> None:
    for k in sorted({0, 1, n // 3, n - 1, n}):
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        assert clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), rel=1e-7, abs=1e-12), (k, n)


def _level(value: float, low: float | None, high: float | None, **kw) -> PlannerPoint:
    """A level as the page holds it (its file row), judged as the page and the capacity planner judge it."""
    return PlannerPoint.from_row(
        {
            "p99_ttft_ms": value,
            "p99_ttft_ms_low": low,
            "p99_ttft_ms_high": high,
            "latency_interval_basis": "repeats",
            "latency_interval_n": 2,
        }
        | kw
    )


def test_three_valued_verdict_of_one_limit() -> None:
    assert limit_verdict(TTFT, 2000, _level(1500, 1200, 1900)) == "meets"
    assert limit_verdict(TTFT, 2000, _level(1500, 1200, 2000)) == "meets"  # at the limit meets, as before
    assert limit_verdict(TTFT, 2000, _level(2500, 2100, 2900)) == "misses"
    assert limit_verdict(TTFT, 2000, _level(1900, 1700, 2300)) == "undecided"
    assert limit_verdict(TTFT, 2000, _level(2100, 1700, 2300)) == "undecided"  # over, but not surely
    assert limit_verdict(TTFT, 2000, _level(1500, 1200, None)) == "undecided"  # no upper bound
    # No interval at all (one repeat, no samples): judged on the value, as before intervals.
    assert limit_verdict(TTFT, 2000, _level(1900, None, None)) == "meets"
    assert limit_verdict(TTFT, 2000, _level(2100, None, None)) == "misses"
    assert limit_verdict(TTFT, None, _level(9999, 9000, 9999)) is None


def test_what_would_decide_an_undecided_level() -> None:
    # 1900 [1700, 2300] vs 2000 from 2 repeats, a t interval on the log scale: the spread it implies is
    # s = ln(2300 / 1900) sqrt(2) / t(0.975, 1); k repeats leave the limit out once
    # t(0.975, k - 1) s / sqrt(k) < ln(2000 / 1900): 3 repeats give 2.48 s > 2.41 s, 4 give 1.59 s.
    spread = math.log(2300 / 1900) * math.sqrt(2) / stats.t.ppf(0.975, 1)
    half = {k: stats.t.ppf(0.975, k - 1) * spread / math.sqrt(k) for k in (3, 4)}
    assert half[3] > math.log(2000 / 1900) > half[4]
    assert to_decide(TTFT, 2000, _level(1900, 1700, 2300)) == "about 4 repeats (now 2) would decide it"
    assert to_decide(TTFT, 2000, _level(1999, 1700, 2300)).startswith("more than 200 repeats (now 2)")
    by_requests = _level(1900, 1700, 2300, latency_interval_basis="requests", latency_interval_n=200)
    # One repeat's order statistics: (400 / 100)^2 = 16 times the requests.
    assert to_decide(TTFT, 2000, by_requests) == "about 3200 requests per repeat (now 200) would decide it"
    one_repeat = _level(1500, 1200, None, latency_interval_basis="requests", latency_interval_n=200)
    assert to_decide(TTFT, 2000, one_repeat).startswith("at least 368 requests per repeat (now 200)")
    verdict, why = slo_judgement(_level(1900, 1700, 2300), SLOS)
    assert verdict == "undecided"
    assert why == ["p99 TTFT 1900 ms [1700, 2300] vs 2000 ms: about 4 repeats (now 2) would decide it"]
    assert slo_judgement(_level(2500, 2100, 2900), SLOS) == (
        "misses",
        ["p99 TTFT 2500 ms [2100, 2900] > 2000 ms"],
    )
    assert slo_judgement(_level(2500, None, None), SLOS) == (
        "misses",
        ["p99 TTFT 2500 ms > 2000 ms"],
    )  # no interval


def _points() -> list[dict]:
    """One configuration: c1 meets (interval under 2000 ms), c2 is undecided and faster."""
    runs = [
        *_repeats([100, 104], [900, 1000]),
        *(
            r | {"level_value": 8.0, "run_id": f"c8-{i}"}
            for i, r in enumerate(_repeats([200, 210], [1500, 1900]))
        ),
    ]
    return gather(runs, PRICES, [], ReportFilter(ttft_p99_ms=2000)).points


def test_an_undecided_level_is_never_the_best_and_says_what_would_decide_it() -> None:
    typed = _points()
    points = records(typed)
    verdicts = {p["level_value"]: p["slo_verdict"] for p in points}
    assert verdicts == {4.0: "meets", 8.0: "undecided"}
    (best,) = records(best_under_slos(typed, SLOS))
    assert best["level_value"] == 4.0  # the slower level whose interval is under the limit
    assert best["undecided_above"].startswith("concurrency 8: p99 TTFT ")
    # Repeats of 1500 and 1900 ms: log spread 0.167; 7 repeats give t(0.975, 6) 0.167 / sqrt(7) = 0.155, under
    # ln(2000 / 1688) = 0.170 (6 give 0.175).
    assert best["undecided_above"].endswith("about 7 repeats (now 2) would decide it")
    # The same data judged on the estimates alone (the c8 estimate, 1688 ms, is under the limit) would
    # have picked c8.
    assert next(p for p in points if p["level_value"] == 8.0)["p99_ttft_ms"] < 2000


def test_the_headline_and_the_planner_never_rank_an_undecided_level() -> None:
    points = [p for p in records(_points()) if p["level_value"] == 8.0]  # only the undecided level
    tables = build_report(
        [
            r | {"level_value": 8.0, "run_id": f"c8-{i}"}
            for i, r in enumerate(_repeats([200, 210], [1500, 1900]))
        ],
        PRICES,
        [],
        ReportFilter(ttft_p99_ms=2000),
    )
    (h,) = tables["headline"]
    assert h["answer"] == "no configuration meets the SLOs" and tables["best_under_slo"] == []
    assert h["undecided"].startswith("m8g.xlarge · vLLM 0.32.0 · TP1 at concurrency 8: p99 TTFT ")
    assert plan_capacity(points, 1, ttft_p99_ms=2000) == []
    (why,) = left_out(points, 1, ttft_p99_ms=2000)
    assert (
        why["reason"].startswith("undecided concurrency 8: p99 TTFT ") and "would decide it" in why["reason"]
    )
    ranked = plan_capacity(records(_points()), 1, ttft_p99_ms=2000)
    assert [r["level"] for r in ranked] == ["concurrency 4"]
    assert ranked[0]["undecided_above"].startswith("concurrency 8: p99 TTFT ")


def test_the_files_keep_the_bounds_and_the_page_shows_them(tmp_path) -> None:
    runs = [r | {"date": "2026-11-10"} for r in _repeats([100, 110, 126], [300, 320, 330])]
    flt = ReportFilter(ttft_p99_ms=2000)
    tables = build_report(runs, PRICES, [], flt)
    lake = Lake(str(tmp_path / "lake"))
    written = write_report(lake, "rid", tables, flt, len(runs), datetime(2026, 11, 30, tzinfo=UTC))
    (row,) = pq.read_table(lake.fs.open(written["points.parquet"], "rb")).to_pylist()
    assert all(f"{c}_low" in row and f"{c}_high" in row for c in WITH_INTERVAL)  # every figure, its bounds
    assert row["output_throughput_low"] < row["output_throughput"] < row["output_throughput_high"]
    assert row["run_ids"] == ["r0", "r1", "r2"]
    with lake.fs.open(written["points.csv"], "rb") as f:
        (line,) = csv.DictReader(io.TextIOWrapper(f, encoding="utf-8"))
    assert line["Run ids (oldest first)"] == "r0; r1; r2"
    assert float(line["Output tokens per s (mean): 95% interval, low"]) == pytest.approx(
        row["output_throughput_low"]
    )
    page = render_html("rid", tables, flt, len(runs), datetime(2026, 11, 30, tzinfo=UTC))
    low, high = row["output_throughput_low"], row["output_throughput_high"]
    assert f'112<br><span class="ci">{low:.3g}\N{EN DASH}{high:,.0f}</span>' in page
    assert 'id="intervals"' in page and "Clopper-Pearson" in page
    # The answer's sentence gives the request rate and the costs with their intervals too.
    answer = page[page.index('class="answer"') : page.index("</p>", page.index('class="answer"'))]
    assert "1.12\n[0.794\N{EN DASH}1.45] requests/s per replica" in answer
    assert answer.count("[") == 3  # requests/s, on-demand and spot USD per 1M output tokens


def test_the_headline_names_only_the_undecided_levels_that_could_change_its_answer() -> None:
    def level(instance: str, tier: str, outs: list[float], ttfts: list[float], prefix: str) -> list[dict]:
        return [
            run_row(instance, tier, 8, i, out, out * 1.5, ttft, 20, run_id=f"{prefix}{i}")
            for i, (out, ttft) in enumerate(zip(outs, ttfts, strict=True))
        ]

    runs = [
        *_repeats([100, 104], [900, 1000]),  # m8g.xlarge c4 meets: 0.20 USD/h at 102 tokens/s, 0.54 USD/1M
        *level("r8g.large", "cpu", [200, 210], [1500, 1900], "r8g-"),  # undecided, 0.07 USD/1M: cheaper
        *level("g6e.xlarge", "gpu", [200, 210], [1500, 1900], "g6e-"),  # undecided, 2.52 USD/1M: dearer
    ]
    (h,) = build_report(runs, PRICES, [], ReportFilter(ttft_p99_ms=2000))["headline"]
    assert h["answer"] == "cheapest under the SLOs" and h["instance_type"] == "m8g.xlarge"
    assert h["undecided"].startswith("r8g.large · vLLM 0.32.0 · TP1 at concurrency 8: p99 TTFT ")
    assert "g6e.xlarge" not in h["undecided"]  # met, it would still cost more than the answer
