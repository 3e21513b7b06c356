"""What a report may pool, price and rank: points per workload and host, the answer worked out by hand.

Rows are shaped as `Lake.read("runs").to_pylist()` gives them (the lake's column names); every number
asserted here is computed in the comments beside it.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from accelbench.core.price import Price
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.imported import ImportTarget, import_results
from accelbench.lake.store import Lake
from accelbench.local.tiny_model import server_spec
from accelbench.report.build import ReportFilter, build_report, write_report
from accelbench.report.points import level_points
from accelbench.report.records import records
from accelbench.report.samples import alone, read_samples
from accelbench.report.slos import Slos, best_under_slos
from accelbench.report.tables.cross_tier import DIFFERENT_WORKLOAD

from tests.support.lake_rows import land_campaign
from tests.support.paths import REPO

JULY = datetime(2026, 7, 20, tzinfo=UTC)
PRICES = [
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.17952, JULY, "snapshot"),
    Price("m8g.xlarge", "us-east-1", "spot", 0.072, JULY, "spot history"),
    Price("c8g.xlarge", "us-east-1", "on_demand", 0.15952, JULY, "snapshot"),
    Price("c8g.xlarge", "us-east-1", "spot", 0.064, JULY, "spot history"),
    Price("g6e.xlarge", "us-east-1", "on_demand", 1.861, JULY, "snapshot"),
]
# The demo campaign's level at concurrency 2 (64 -> 32 tokens), as vllm bench serve saved it.
RESULT = json.loads((REPO / "tests" / "data" / "bench_results" / "vllm-bench-serve-c2.json").read_text())


def run(instance: str, level: int, out_tps: float, **kw: Any) -> dict[str, Any]:
    """One measured level; request rate = output tokens/s / 32 (32 output tokens per request)."""
    return {
        "run_id": "/".join(str(kw.get(k, d)) for k, d in (("campaign_id", "c1"), ("input_len", 128)))
        + f"/{instance}/{level}/{len(kw)}",
        "campaign_id": "c1",
        "status": "ok",
        "accelerator_type": "cpu",
        "instance_type": instance,
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "quantization": None,
        "vllm_version": "0.32.0",
        "dtype": "bfloat16",
        "kv_cache_dtype": "auto",
        "max_model_len": 4096,
        "tensor_parallel_size": 1,
        "engine_args": "",
        "dataset": "random",
        "input_len": 128,
        "output_len": 32,
        "range_ratio": 0.0,
        "execution_mode": "kubernetes",
        "measured_on_instance": True,
        "host_instance_type": instance,
        "level_kind": "concurrency",
        "level_value": float(level),
        "repeat": 0,
        "request_throughput": out_tps / 32,
        "output_throughput": out_tps,
        "total_token_throughput": out_tps * 5,  # (128 + 32) / 32 tokens per output token
        "p99_ttft_ms": 100.0,
        "p99_tpot_ms": 20.0,
        "p99_e2el_ms": 800.0,
        "completed": 2000,
        "failed": 0,
        "accelerator_count": 0,
        "started_at": datetime(2026, 11, 10, tzinfo=UTC),
        "date": "2026-11-10",
    } | kw


LOCAL_HOST = {
    "execution_mode": "local",
    "measured_on_instance": False,
    "host_instance_type": None,
    "host_architecture": "x86_64",
    "host_cpu_model": "AMD EPYC 7B13",
    "host_vcpus": 2,
    "image": "vllm/vllm-openai-cpu:v0.32.0-arm64",
    "server_image_id": "vllm==0.32.0 local process (no image)",
}


def test_two_workloads_on_one_instance_are_two_points_and_reruns_pool_with_their_count() -> None:
    runs = [
        run("m8g.xlarge", 4, 180),
        run("m8g.xlarge", 4, 200, campaign_id="c2"),  # the demo run again: same point, second campaign
        run("m8g.xlarge", 4, 40, input_len=4096, output_len=512),
    ]
    points = records(level_points(runs, PRICES, "us-east-1"))
    assert len(points) == 2
    short, long = sorted(points, key=lambda p: p["input_len"])
    assert (short["workload"], long["workload"]) == ("random 128→32", "random 4096→512")
    assert short["repeats"] == 2 and short["campaigns"] == 2 and short["output_throughput"] == 190
    assert long["repeats"] == 1 and long["output_throughput"] == 40
    assert short["configuration_id"] != long["configuration_id"]
    # TP and engine arguments are part of the configuration too.
    variants = [run("m8g.xlarge", 4, 180, engine_args="--enable-prefix-caching"), run("m8g.xlarge", 4, 180)]
    assert len(level_points(variants, PRICES, "us-east-1")) == 2


def test_the_headline_names_the_cheapest_configuration_meeting_every_slo_by_hand() -> None:
    runs = [
        # c8g.xlarge, 0.15952 USD/h. c16: 400 tok/s but p99 E2EL 3000 ms > 2000: misses.
        run("c8g.xlarge", 16, 400, p99_e2el_ms=3000.0),
        # c8: 300 tok/s, 30 of 2000 requests failed: error rate 30 / 2030 = 1.48% > 1%: misses.
        run("c8g.xlarge", 8, 300, status="errors", completed=2000, failed=30),
        # c4: 150 tok/s, meets all: 0.15952 / 3600 / 150 x 1e6 = 0.29541 USD per 1M output tokens.
        run("c8g.xlarge", 4, 150),
        # m8g.xlarge, 0.17952 USD/h. c8: 250 tok/s, 5 of 2000 failed (0.25% <= 1%): meets all:
        # 0.17952 / 3600 / 250 x 1e6 = 0.19947 USD per 1M output tokens: the cheapest under the SLOs.
        run("m8g.xlarge", 8, 250, status="errors", completed=1995, failed=5),
        # A local run that would be "cheapest" at m8g's price (1000 tok/s): never priced or ranked.
        run("m8g.xlarge", 8, 1000, **LOCAL_HOST),
    ]
    flt = ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50, e2el_p99_ms=2000, max_error_rate=0.01)
    tables = build_report(runs, PRICES, [], flt)
    answer, local = tables["headline"]
    assert answer["answer"] == "cheapest under the SLOs"
    assert (answer["instance_type"], answer["level_value"]) == ("m8g.xlarge", 8.0)
    assert answer["configurations_measured"] == 2 and answer["configurations_meeting_slos"] == 2
    assert answer["on_demand_usd_per_1m_output_tokens"] == pytest.approx(0.17952 / 3600 / 250 * 1e6)
    assert answer["on_demand_usd_per_1m_output_tokens"] == pytest.approx(0.19947, rel=1e-4)
    # Total tokens: 5 x 250 = 1250 tok/s: 0.17952 / 3600 / 1250 x 1e6 = 0.039893.
    assert answer["on_demand_usd_per_1m_total_tokens"] == pytest.approx(0.039893, rel=1e-4)
    assert answer["spot_usd_per_1m_output_tokens"] == pytest.approx(0.072 / 3600 / 250 * 1e6)
    assert answer["request_throughput"] == pytest.approx(250 / 32)  # per replica: 7.8125 req/s
    assert answer["error_rate"] == pytest.approx(5 / 2000)
    # The best table is sorted by cost: m8g c8 (0.19947) before c8g c4 (0.29541).
    assert [(p["instance_type"], p["level_value"]) for p in tables["best_under_slo"]] == [
        ("m8g.xlarge", 8.0),
        ("c8g.xlarge", 4.0),
    ]
    assert tables["best_under_slo"][1]["on_demand_usd_per_1m_output_tokens"] == pytest.approx(
        0.29541, rel=1e-4
    )
    assert (
        local["answer"].startswith("local host only")
        and local["host"] == "local: x86_64 AMD EPYC 7B13, 2 vCPU"
    )
    assert local["on_demand_usd_per_1m_output_tokens"] is None
    # What each level misses, in words.
    c16 = next(p for p in tables["points"] if p["instance_type"] == "c8g.xlarge" and p["level_value"] == 16)
    assert flt.slos.misses(c16) == ["p99 E2E latency 3000 ms > 2000 ms"]
    c8 = next(p for p in tables["points"] if p["instance_type"] == "c8g.xlarge" and p["level_value"] == 8)
    assert flt.slos.misses(c8) == ["error rate 1.48% > 1.00%"]


def test_a_local_run_is_labelled_unpriced_and_kept_out_of_the_ranking(tmp_path) -> None:
    runs = [run("m8g.xlarge", 4, 180), run("m8g.xlarge", 4, 900, **LOCAL_HOST)]
    points = records(level_points(runs, PRICES, "us-east-1"))
    assert len(points) == 2  # the same instance, workload and level: never one point
    local = next(p for p in points if not p["measured_on_instance"])
    assert local["host"] == "local: x86_64 AMD EPYC 7B13, 2 vCPU"
    assert local["ran"] == "vllm==0.32.0 local process (no image)"  # not the planned arm64 image
    assert all(local[f"{m}_usd_per_hour"] is None for m in ("on_demand", "spot"))
    assert local["on_demand_usd_per_1m_output_tokens"] is None
    flt = ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50)
    tables = build_report(runs, PRICES, [], flt)
    assert [p["host"] for p in tables["best_under_slo"]] == ["instance"]
    assert [p["host"] for p in tables["local_results"]] == [local["host"]]
    assert all(p["measured_on_instance"] for p in tables["frontier"])
    # Old rows without host facts: a local execution is still a local host, a kubernetes one the instance.
    legacy = run("m8g.xlarge", 4, 900, execution_mode="local", measured_on_instance=None)
    assert records(level_points([legacy], PRICES, "us-east-1"))[0]["host"] == "local: host not recorded"
    # The label is in the files people and queries read: CSV (human headers) and Parquet.
    lake = Lake(str(tmp_path / "lake"))
    written = write_report(lake, "20261201T000000Z", tables, flt, len(runs))
    csv = pacsv.read_csv(io.BytesIO(lake.fs.cat_file(written["local_results.csv"])))
    assert csv.column("Measured on").to_pylist() == [local["host"]]
    parquet = pq.read_table(io.BytesIO(lake.fs.cat_file(written["points.parquet"])))
    assert sorted(parquet.column("measured_on_instance").to_pylist()) == [False, True]
    html = lake.fs.cat_file(written["report.html"]).decode()
    assert "local host only: not an instance measurement, not priced" in html
    assert "not a throughput or a price of the instance type" in html


def test_slos_judge_e2el_and_the_error_rate_and_a_missing_value_fails_a_set_limit() -> None:
    ok = run("m8g.xlarge", 1, 100)
    points = level_points([ok, run("m8g.xlarge", 2, 120, p99_e2el_ms=None)], PRICES, "us-east-1")
    assert [p["level_value"] for p in records(best_under_slos(points, Slos(e2el_p99_ms=1000)))] == [1.0]
    assert [p["level_value"] for p in records(best_under_slos(points, Slos()))] == [
        2.0
    ]  # no limits: the fastest


def _gpu_file(folder: Path, name: str, speedup: float, **changes: Any) -> None:
    """The demo's result file as a faster GPU server would have saved it (every throughput `speedup`
    times the CPU's), with `changes` (a workload's own lengths or backend)."""
    faster = {
        k: RESULT[k] * speedup for k in ("request_throughput", "output_throughput", "total_token_throughput")
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(
        json.dumps(RESULT | faster | {"duration": RESULT["duration"] / speedup} | changes)
    )


def test_a_cpu_campaign_and_an_imported_gpu_run_of_one_workload_are_compared_other_workloads_apart(
    tmp_path: Path,
) -> None:
    lake = Lake(str(tmp_path / "lake"))
    model = "Qwen/Qwen2.5-0.5B-Instruct"
    server = server_spec(model).model_copy(update={"instance_type": "m8g.xlarge"})
    load = LoadPlan(input_len=64, output_len=32, concurrency=(2,))
    land_campaign(lake, BenchmarkSpec(server=server, load=load, campaign_id="cpu-week"), {2: RESULT})
    gpu = {"accelerator_type": "gpu", "instance_type": "g6e.xlarge", "accelerator_count": 1, "model": model}
    image = "vllm/vllm-openai:v0.11.0"
    same, longer = tmp_path / "same", tmp_path / "longer"
    _gpu_file(same, "c2.json", 12)
    # The same lengths on /v1/chat/completions: the file's backend says so, the chat template changes it.
    _gpu_file(same, "c2-chat.json", 10, backend="openai-chat", endpoint_type="openai-chat")
    _gpu_file(
        longer,
        "c2.json",
        3,
        input_lens=[1024] * 20,
        output_lens=[128] * 20,
        total_input_tokens=1024 * 20,
        total_output_tokens=128 * 20,
    )
    stated = ImportTarget(**gpu, vllm_version="0.11.0", image=image, input_len=64, output_len=32)
    assert import_results(lake, str(same), stated, "manual__gpu", (tmp_path,)).runs == 2
    stated = ImportTarget(**gpu, vllm_version="0.11.0", image=image, input_len=1024, output_len=128)
    assert import_results(lake, str(longer), stated, "manual__gpu", (tmp_path,)).runs == 1

    runs = lake.read("runs").to_pylist()
    tables = build_report(runs, PRICES, [], ReportFilter())
    (cpu,) = [p for p in tables["points"] if p["accelerator_type"] == "cpu"]
    group = [r for r in tables["cross_tier"] if r["comparison_id"] == cpu["comparison_id"]]
    assert [(r["accelerator_type"], r["execution_mode"]) for r in group] == [
        ("gpu", "imported"),  # cheapest first: 12 times the throughput at 10.4 times the price
        ("cpu", "kubernetes"),
    ]
    imported, measured = group
    assert imported["workload"] == measured["workload"] == "random 64→32"
    assert imported["tiers_compared"] == "cpu, gpu"
    # Both priced from their own throughput at their own instance's price.
    assert measured["on_demand_usd_per_1m_output_tokens"] == pytest.approx(
        0.17952 / 3600 / RESULT["output_throughput"] * 1e6
    )
    assert imported["on_demand_usd_per_1m_output_tokens"] == pytest.approx(
        1.861 / 3600 / (12 * RESULT["output_throughput"]) * 1e6
    )
    assert imported["on_demand_usd_per_1m_total_tokens"] == pytest.approx(
        1.861 / 3600 / (12 * RESULT["total_token_throughput"]) * 1e6
    )
    assert imported["output_throughput_per_accelerator"] == pytest.approx(12 * RESULT["output_throughput"])
    assert measured["output_throughput_per_accelerator"] is None  # blank on CPU
    # Provenance, and what was measured where.
    assert (imported["vllm_version"], imported["tensor_parallel_size"], imported["ran"]) == (
        "0.11.0",
        1,
        image,
    )
    assert imported["measured_where"] == "imported: g6e.xlarge as stated by the importer"
    assert (measured["vllm_version"], measured["ran"]) == ("0.32.0", server.image)
    assert measured["measured_where"] == "measured on m8g.xlarge (kubernetes)"

    # The other workloads' GPU points are in no comparison with the CPU point, and say what differs.
    apart = {r["workload"]: r for r in tables["not_compared"]}
    assert set(apart) == {"random 1024→128", "random 64→32 (chat)"}
    assert not [r for r in tables["cross_tier"] if r["accelerator_type"] == "gpu" and r["workload"] in apart]
    for row in apart.values():
        assert row["comparison_id"] != cpu["comparison_id"] and row["accelerator_type"] == "gpu"
        assert row["not_compared_because"] == DIFFERENT_WORKLOAD
    assert apart["random 1024→128"]["workload_differs"] == (
        "cpu random 64→32: input_len 1024 vs 64, output_len 128 vs 32"
    )
    assert (
        apart["random 64→32 (chat)"]["workload_differs"] == "cpu random 64→32: endpoint chat vs completions"
    )

    written = write_report(lake, "20261201T000000Z", tables, ReportFilter(), len(runs))
    csv = pacsv.read_csv(io.BytesIO(lake.fs.cat_file(written["cross_tier.csv"])))
    assert csv.column("Measured where (imported: as stated)").to_pylist() == [
        imported["measured_where"],
        measured["measured_where"],
    ]
    html = lake.fs.cat_file(written["report.html"]).decode()
    section = html[html.index('id="cross-tier"') : html.index('id="best"')]
    compared = section[section.index(f'id="cross-tier-{cpu["comparison_id"]}"') : section.index("</table>")]
    assert "imported: g6e.xlarge as stated by the importer" in compared and "1024" not in compared
    listed = section[section.index('id="not-compared-table"') :]
    assert listed.count(DIFFERENT_WORKLOAD) == 2 and "input_len 1024 vs 64" in listed


def test_a_report_of_repeated_points_reads_their_percentiles_alone_and_is_unchanged(tmp_path) -> None:
    """Issue 50: the report reads whole distributions only for a point of one repeat (`alone`), the stored
    percentiles of the others; its tables are those of a report that read every run whole."""
    lake = Lake(str(tmp_path / "lake"))
    server = server_spec("org/model").model_copy(update={"instance_type": "m8g.xlarge"})
    load = LoadPlan(input_len=64, output_len=32, concurrency=(2, 4))
    rng = np.random.default_rng(5)

    def result(scale: float) -> dict:  # the demo's level with its requests' latencies moved
        moved = dict(RESULT)
        for key in ("ttfts", "latencies"):
            moved[key] = [v * scale * float(rng.uniform(0.8, 1.25)) for v in RESULT[key]]
        return moved

    spec = BenchmarkSpec(server=server, load=load, campaign_id="week")
    # Level 2 in three repeats (percentiles alone), level 4 in one (whole: its interval is its requests').
    land_campaign(lake, spec, {2: [result(1.0), result(1.1), result(0.9)], 4: result(1.7)})
    runs = lake.read("runs").to_pylist()
    ids = [r["run_id"] for r in runs]
    single = {r["run_id"] for r in runs if r["level_value"] == 4.0}
    assert alone(runs) == single and len(ids) == 4

    every = read_samples(lake, ids)
    mixed = read_samples(lake, ids, whole=alone(runs))
    assert all(d.whole for metrics in every.by_run.values() for d in metrics.values())
    assert {r for r, metrics in mixed.by_run.items() if all(d.whole for d in metrics.values())} == single
    shown = [build_report(runs, [], [], ReportFilter(), samples=s) for s in (every, mixed)]
    same = [json.dumps(tables, default=str, sort_keys=True) for tables in shown]
    assert same[0] == same[1]
    (point,) = [p for p in shown[1]["points"] if p["level_value"] == 2.0]
    assert "3 repeats" in point["latency_interval"] and point["p99_ttft_ms_low"] is not None


def test_a_report_that_needs_more_than_the_read_percentiles_reads_every_run_whole(
    tmp_path, monkeypatch, caplog
) -> None:
    """The report task's guard (`report.service`): should its rule leave a one-repeat point's run as its
    percentiles alone (here forced: `alone` finds nothing), the report reads every run whole, says so in
    the log, and is the report of whole reads; it does not fail."""
    from contextlib import contextmanager

    from accelbench.catalog.db import make_engine, migrate
    from accelbench.report import service

    lake = Lake(str(tmp_path / "lake"))
    server = server_spec("org/model").model_copy(update={"instance_type": "m8g.xlarge"})
    load = LoadPlan(input_len=64, output_len=32, concurrency=(2,))
    land_campaign(lake, BenchmarkSpec(server=server, load=load, campaign_id="once"), {2: RESULT})
    engine = make_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate(engine)

    @contextmanager
    def catalog():
        yield engine

    def report_points() -> list[dict]:
        written = service.cross_tier_report({"region": "us-east-1"}, catalog, lambda: lake)
        (row,) = pq.read_table(written.files["points.parquet"].removeprefix("file://")).to_pylist()
        return row

    whole = report_points()
    monkeypatch.setattr(service, "alone", lambda rows: set())
    with caplog.at_level("WARNING", logger="accelbench.report.service"):
        forced = report_points()
    assert "reading every run's" in caplog.text
    assert {k: v for k, v in forced.items() if k != "report_id"} == {
        k: v for k, v in whole.items() if k != "report_id"
    }
    assert forced["latency_interval"].startswith("order statistics, 20 requests")  # its own requests
