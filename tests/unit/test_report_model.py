"""The report model against numbers worked out by hand on a small runs table."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from accelbench.core.price import price_at
from accelbench.report.build import ReportFilter, build_report
from accelbench.report.hosts import measured_where
from accelbench.report.keys import WARMUPS_APART_SINCE, warmups_in_window
from accelbench.report.points import level_points
from accelbench.report.pricing import cost_per_million
from accelbench.report.records import records
from accelbench.report.retractions import Retraction, split_retracted
from accelbench.report.slos import Slos, best_under_slos
from accelbench.report.tables.cross_tier import NO_OTHER_TIER, OTHERS_MISS_SLOS, cross_tier
from accelbench.report.tables.frontier import frontier
from accelbench.report.tables.version_deltas import version_deltas

from tests.support.report_data import JULY, PRICES, RUNS, run_row


def _point(points, instance: str, level: int):
    return next(p for p in points if p["instance_type"] == instance and p["level_value"] == level)


def test_cost_per_million_tokens_by_hand() -> None:
    # 0.18 USD/h = 0.00005 USD/s; at 110 tokens/s a token costs 4.545e-7 USD: 0.4545 USD per 1M.
    assert cost_per_million(0.18, 110) == pytest.approx(0.454545, rel=1e-5)
    assert cost_per_million(0.18, 0) is None and cost_per_million(None, 10) is None


def test_price_in_force_at_the_run_date() -> None:
    when = datetime(2026, 11, 11, tzinfo=UTC)
    assert price_at(PRICES, "m8g.xlarge", "us-east-1", "on_demand", when).usd_per_hour == 0.18
    assert (
        price_at(
            PRICES, "m8g.xlarge", "us-east-1", "on_demand", datetime(2026, 11, 13, tzinfo=UTC)
        ).usd_per_hour
        == 0.20
    )
    assert price_at(PRICES, "m8g.xlarge", "us-east-1", "spot", JULY) is None  # no spot price yet


def test_level_points_estimate_over_ok_repeats_and_price_them() -> None:
    points = records(level_points(RUNS, PRICES, "us-east-1"))
    c1 = _point(points, "m8g.xlarge", 1)
    # Throughputs: the mean of 100 and 120; percentiles: the geometric mean of the repeats' (100, 200 ms).
    assert c1["repeats"] == 2 and c1["output_throughput"] == 110 and c1["total_token_throughput"] == 160
    assert c1["p99_ttft_ms"] == pytest.approx(math.sqrt(100 * 200))
    assert c1["p99_tpot_ms"] == pytest.approx(math.sqrt(20 * 30))
    assert c1["output_throughput_cv"] == pytest.approx(14.1421356 / 110)  # stdev(100, 120) / mean
    assert c1["on_demand_usd_per_hour"] == 0.18  # the 0.20 price took effect after the runs
    assert c1["on_demand_price_source"] == "snapshot, 2026-07-20"
    assert c1["on_demand_usd_per_1m_output_tokens"] == pytest.approx(0.454545, rel=1e-5)
    assert c1["on_demand_usd_per_1m_total_tokens"] == pytest.approx(0.3125)
    assert c1["spot_usd_per_1m_output_tokens"] == pytest.approx(0.07 / 3600 / 110 * 1e6)
    assert c1["output_throughput_per_accelerator"] is None  # blank for CPU, never zero
    assert c1["sample_warning"] == "p99 from 200 requests (< 1000)"
    assert c1["server_memory_peak_gib"] == 1.5  # the larger RssAnon peak of the two repeats, in GiB
    assert c1["workload"] == "random 128→32" and c1["level"] == "concurrency 1"
    assert c1["configuration"] == "m8g.xlarge · vLLM 0.32.0 · TP1" and c1["campaigns"] == 1
    c2 = _point(points, "m8g.xlarge", 2)
    assert c2["repeats"] == 1 and c2["output_throughput"] == 200  # the failed repeat is left out
    gpu = _point(points, "g6e.xlarge", 16)
    assert gpu["output_throughput_per_accelerator"] == 3600 and gpu["sample_warning"] is None
    assert gpu["on_demand_usd_per_1m_output_tokens"] == pytest.approx(1.861 / 3600 / 3600 * 1e6)
    assert gpu["spot_usd_per_hour"] is None and gpu["spot_usd_per_1m_output_tokens"] is None


def test_best_point_under_slos_and_the_frontier() -> None:
    points = level_points(RUNS, PRICES, "us-east-1")
    typed = best_under_slos(points, Slos(ttft_p99_ms=2000, tpot_p99_ms=50))
    best = records(typed)
    chosen = {p["instance_type"]: p["level_value"] for p in best}
    assert chosen == {"m8g.xlarge": 2.0, "g6e.xlarge": 16.0, "r8g.large": 1.0}  # c4 breaks the TTFT SLO
    # Sorted by cost: g6e 0.1436 USD per 1M output tokens, m8g c2 0.25, r8g 0.2778.
    assert [p["instance_type"] for p in best] == ["g6e.xlarge", "m8g.xlarge", "r8g.large"]
    assert {p["instance_type"] for p in records(best_under_slos(points, Slos(tpot_p99_ms=12)))} == {
        "r8g.large"
    }
    # m8g c2: 0.25 USD/1M at 500/35 ms; g6e: 0.1436 at 300/15 ms (beats m8g on all); r8g: 0.2778 at 90/10.
    assert [p["instance_type"] for p in records(frontier(typed))] == ["g6e.xlarge", "r8g.large"]


def _version_runs(
    version: str, outs: tuple[float, float], ttft: float, tpot: float, instance: str = "m8g.xlarge"
):
    return [
        run_row(
            instance,
            "cpu",
            1,
            i,
            out,
            out + 50,
            ttft,
            tpot,
            vllm_version=version,
            run_id=f"{version}-{instance}-{i}",
        )
        for i, out in enumerate(outs)
    ]


def test_version_deltas_test_each_change_and_leave_small_ones_alone() -> None:
    runs = [
        *_version_runs("0.31.0", (100, 104), 100, 20),
        *_version_runs("0.32.0", (80, 82), 103, 15),
        *_version_runs("0.10.0", (50, 50), 100, 10, "r8g.large"),
        *_version_runs("0.9.0", (40, 40), 100, 10, "r8g.large"),
    ]
    deltas = {
        d["instance_type"]: d for d in records(version_deltas(level_points(runs, PRICES, "us-east-1"), runs))
    }
    m8g = deltas["m8g.xlarge"]
    assert (m8g["from_version"], m8g["to_version"]) == ("0.31.0", "0.32.0")
    # Throughput 100, 104 -> 80, 82 (no request samples: the repeats alone, a t test on their logs): the
    # ratio of geometric means, -20.6%, its interval beyond -5%, q <= 0.05 across the table: a regression.
    change = (80 * 82) ** 0.5 / (100 * 104) ** 0.5 - 1
    assert m8g["output_throughput_change"] == pytest.approx(change)
    assert m8g["output_throughput_change_low"] < change < m8g["output_throughput_change_high"] < -0.05
    assert m8g["output_throughput_q"] <= 0.05 and m8g["output_throughput_verdict"] == "regression"
    assert m8g["output_throughput_finding"].startswith("output tokens/s -21% [")
    assert m8g["p99_ttft_ms_verdict"] == "no change"  # +3%, under the 5% minimum effect
    assert m8g["p99_tpot_ms_verdict"] == "improvement"  # 20 -> 15 ms
    assert "no request samples, repeats only" in m8g["change_method"]
    r8g = deltas["r8g.large"]
    assert (r8g["from_version"], r8g["to_version"]) == ("0.9.0", "0.10.0")  # semantic, not string order
    assert r8g["output_throughput_verdict"] == "improvement"
    # Without the runs (their repeats' figures) nothing can be tested: undecided, never a made-up verdict.
    blind = records(version_deltas(level_points(runs, PRICES, "us-east-1")))
    assert {d["output_throughput_verdict"] for d in blind} == {"undecided"}


def test_retracted_runs_leave_the_report_and_are_listed_with_why() -> None:
    runs = _version_runs("0.32.0", (80, 82), 103, 15)
    kept, gone = split_retracted(runs, [Retraction("0.32.0-m8g.xlarge-1", "noisy neighbour", "run-9")])
    assert [r["run_id"] for r in kept] == ["0.32.0-m8g.xlarge-0"]
    assert gone[0]["retraction_reason"] == "noisy neighbour" and gone[0]["superseded_by"] == "run-9"
    assert records(level_points(kept, PRICES, "us-east-1"))[0]["output_throughput"] == 80


def test_the_filter_prunes_partitions_and_rows_when_the_lake_is_read(tmp_path) -> None:
    import pyarrow as pa
    from accelbench.lake.schemas import RUNS as RUNS_SCHEMA
    from accelbench.lake.store import Lake
    from accelbench.report.build import ReportFilter, partition_filter

    lake = Lake(str(tmp_path / "lake"))
    for i, (tier, day) in enumerate([("cpu", "2026-11-01"), ("cpu", "2026-11-20"), ("gpu", "2026-11-20")]):
        row = run_row("m8g.xlarge", tier, 1, 0, 100, 150, 100, 20) | {"run_id": f"r{i}", "model": f"m{i % 2}"}
        lake.write_table("runs", pa.Table.from_pylist([row], schema=RUNS_SCHEMA), tier, day, f"s{i}")

    def ids(**kw) -> list[str]:
        return sorted(
            lake.read("runs", where=partition_filter(ReportFilter(**kw))).column("run_id").to_pylist()
        )

    assert partition_filter(ReportFilter()) is None and ids() == ["r0", "r1", "r2"]
    assert ids(tiers=["gpu"]) == ["r2"]
    assert ids(date_from=datetime(2026, 11, 10).date()) == ["r1", "r2"]
    assert ids(date_to=datetime(2026, 11, 1).date(), tiers=["cpu"]) == ["r0"]
    assert ids(models=["m1"]) == ["r1"]


def test_the_cross_tier_table_groups_one_model_and_workload_and_says_why_a_point_stands_alone() -> None:
    slos = Slos(ttft_p99_ms=2000, tpot_p99_ms=50)
    runs = [
        *RUNS,
        run_row("g6e.xlarge", "gpu", 8, 0, 2000, 2400, 200, 10, model="org/gpu-only"),
        run_row("m8g.xlarge", "cpu", 1, 0, 100, 150, 100, 20, model="org/slow-gpu"),
        run_row("g6e.xlarge", "gpu", 8, 0, 2000, 2400, 200, 90, model="org/slow-gpu"),  # TPOT 90 > 50 ms
    ]
    points = level_points(runs, PRICES, "us-east-1")
    compared, apart = map(records, cross_tier(best_under_slos(points, slos), points))
    # org/model: m8g c2, r8g c1 (CPU) and g6e c16 (GPU) on random 128→32, cheapest first (as best is).
    assert [(p["instance_type"], p["level_value"]) for p in compared] == [
        ("g6e.xlarge", 16.0),
        ("m8g.xlarge", 2.0),
        ("r8g.large", 1.0),
    ]
    assert {p["comparison"] for p in compared} == {"model · random 128→32"}
    assert {p["tiers_compared"] for p in compared} == {"cpu, gpu"}
    why = {p["model"]: p["not_compared_because"] for p in apart}
    assert why == {"org/gpu-only": NO_OTHER_TIER, "org/slow-gpu": OTHERS_MISS_SLOS}
    assert all(p["workload_differs"] is None for p in apart)


def test_labels_say_what_was_measured_where() -> None:
    row = run_row("m8g.xlarge", "cpu", 1, 0, 100, 150, 100, 20)
    assert measured_where(row) == "measured on m8g.xlarge (kubernetes)"
    local = row | {"execution_mode": "local", "measured_on_instance": False, "host_architecture": "aarch64"}
    assert measured_where(local) == "local: aarch64"
    imported = run_row("g6e.xlarge", "gpu", 4, 0, 900, 1200, 100, 10, execution_mode="imported")
    assert measured_where(imported) == "imported: g6e.xlarge as stated by the importer"
    (point,) = records(level_points([imported], PRICES, "us-east-1"))
    assert point["measured_where"] == measured_where(imported) and point["measured_on_instance"]
    assert point["on_demand_usd_per_1m_output_tokens"] == pytest.approx(1.861 / 3600 / 900 * 1e6)


def test_rows_from_before_workloads_pool_as_the_fixed_profile_an_old_import_does_not() -> None:
    today = {"workload": "fixed", "endpoint": "completions"}
    runs = [
        run_row("m8g.xlarge", "cpu", 1, 0, 100, 150, 100, 20),  # schema 4: no workload, no endpoint
        run_row("m8g.xlarge", "cpu", 1, 1, 120, 170, 200, 30, **today),
        run_row("g6e.xlarge", "gpu", 4, 0, 900, 1200, 100, 10, execution_mode="imported"),
        run_row("g6e.xlarge", "gpu", 8, 0, 1800, 2400, 100, 10, execution_mode="imported", **today),
    ]
    points = {p["level_value"]: p for p in records(level_points(runs, PRICES, "us-east-1"))}
    assert points[1]["repeats"] == 2 and points[1]["workload_profile"] == "fixed"
    assert points[4]["workload_profile"] is None  # an import that did not say its workload stays unknown
    assert points[1]["comparison_id"] == points[8]["comparison_id"] != points[4]["comparison_id"]


def test_a_local_gpu_run_is_labelled_with_the_gpus_it_ran_on() -> None:
    """Prepared for g6e.xlarge, run on a workstation's H100s: every label says the H100s, never the L40S."""
    run = {
        "execution_mode": "local",
        "instance_type": "g6e.xlarge",
        "host_instance_type": None,
        "host_architecture": "x86_64",
        "host_cpu_model": "AMD EPYC 9654",
        "host_vcpus": 32,
        "host_accelerators": "2 x NVIDIA H100 80GB HBM3 (81559 MiB), driver 570.124.06",
    }
    label = measured_where(run)
    assert label.startswith("local: x86_64 AMD EPYC 9654, 32 vCPU, 2 x NVIDIA H100 80GB HBM3"), label
    assert "g6e.xlarge" not in label


# Per-level warm-ups (level_warmups) ran inside the measured window until 1092ef0, apart since; the rows
# of schema 5 were written on both sides of it. WARMED_UP: a level that warmed up, and the counters of a
# window that held only the measured requests (the server's successes = the client's completed).
WARMED_UP = {"level_warmups": 4, "schema_version": 5, "server_request_success": 200.0, "completed": 200}
BEFORE = WARMUPS_APART_SINCE - timedelta(hours=1)


@pytest.mark.parametrize(
    ("row", "inside"),
    [
        ({}, False),  # no per-level warm-ups (before they existed): nothing ran in the window
        (WARMED_UP | {"level_warmups": 0}, False),
        (WARMED_UP, False),  # the server counted what the client measured: warmed up apart
        (WARMED_UP | {"server_request_success": 204.0}, True),  # and 4 more: the warm-ups
        (WARMED_UP | {"server_request_success": 204.0, "schema_version": 6}, False),  # written after
        (WARMED_UP | {"server_request_success": None, "started_at": BEFORE}, True),  # no counters: the time
        (WARMED_UP | {"server_request_success": None, "started_at": WARMUPS_APART_SINCE}, False),
    ],
)
def test_where_a_runs_warmups_ran_is_read_from_its_row(row: dict, inside: bool) -> None:
    assert warmups_in_window(row) is inside


def test_runs_from_before_and_after_the_warmups_ran_apart_are_two_points_labelled() -> None:
    """The same configuration and level, measured once with its warm-ups inside the measured window (before
    1092ef0) and once with them apart: two points, never one median over both, the older one saying so."""
    counted_warmups = WARMED_UP | {"server_request_success": 204.0}
    before = run_row("m8g.xlarge", "cpu", 4, 0, 100, 150, 100, 20, **counted_warmups)
    after = run_row("m8g.xlarge", "cpu", 4, 1, 130, 180, 90, 20, **WARMED_UP)
    tables = build_report(
        [before | {"run_id": "old"}, after | {"run_id": "new"}], PRICES, [], ReportFilter(ttft_p99_ms=2000)
    )
    old, new = sorted(tables["points"], key=lambda p: not p["warmups_in_window"])
    assert (old["repeats"], old["output_throughput"]) == (1, 100)
    assert (new["repeats"], new["output_throughput"]) == (1, 130)
    assert old["configuration"] == "m8g.xlarge · vLLM 0.32.0 · TP1 · warm-ups in the measured window"
    assert new["configuration"] == "m8g.xlarge · vLLM 0.32.0 · TP1"
    assert old["configuration_id"] != new["configuration_id"] and old["point_id"] != new["point_id"]
    assert len(tables["best_under_slo"]) == 2  # two configurations, each with its best level
