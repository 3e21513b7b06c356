"""The cross-tier report DAG with dag.test(): runs in a local lake, offline prices in the catalog."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from accelbench.catalog.db import make_engine
from accelbench.catalog.queries import latest_prices
from accelbench.lake.ingest import request_table
from accelbench.lake.schemas import RUNS
from accelbench.lake.store import Lake
from accelbench.report.columns import label

from tests.support.airflow_dags import run_dag, task_states
from tests.support.report_data import RUNS as MODEL_RUNS

pytestmark = pytest.mark.airflow
NAMES = ("level_value", "on_demand_usd_per_1m_output_tokens", "output_throughput_per_accelerator")


def test_report_dag_prices_runs_from_the_lake_and_writes_parquet_and_csv(
    airflow_db, accelbench_env: Path, monkeypatch
) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    assert str(run_dag(airflow_db, "accelbench_pricing_refresh").state) == "success"
    lake = Lake(str(accelbench_env / "lake"))
    rows = [r | {"run_id": f"c/s/{i}", "campaign_id": "c", "spec_id": "s"} for i, r in enumerate(MODEL_RUNS)]
    for tier in ("cpu", "gpu"):
        mine = [r for r in rows if r["accelerator_type"] == tier]
        lake.write_table("runs", pa.Table.from_pylist(mine, schema=RUNS), tier, "2026-11-10", "c--s")
    # The requests of m8g.xlarge c2's one repeat (run c/s/2): the task reads them for its latency intervals.
    ttft = np.random.default_rng(3).lognormal(np.log(0.3), 0.2, 400)
    result = {
        "ttfts": ttft,
        "latencies": ttft + 31 * 0.03,
        "itls": [[0.03] * 31] * 400,
        "input_lens": [128] * 400,
        "output_lens": [32] * 400,
        "errors": [""] * 400,
    }
    lake.write_table("requests", request_table(result, "c/s/2", "c", "s"), "cpu", "2026-11-10", "c--s")
    run = run_dag(
        airflow_db, "accelbench_cross_tier_report", {"slos": {"ttft_p99_ms": 2000, "tpot_p99_ms": 50}}
    )
    assert task_states(run) == {"report": "success"}, task_states(run)
    (folder,) = lake.fs.ls(lake.path("reports"))
    with open(f"{folder}/best_under_slo.csv", newline="") as fh:
        best = {r[label("instance_type")]: {n: r[label(n)] for n in NAMES} for r in csv.DictReader(fh)}
    assert set(best) == {"m8g.xlarge", "g6e.xlarge", "r8g.large"}
    assert float(best["m8g.xlarge"]["level_value"]) == 2  # c4 breaks the TTFT SLO
    engine = make_engine(f"sqlite:///{accelbench_env / 'catalog.db'}")
    price = next(
        p.usd_per_hour
        for p in latest_prices(engine)
        if (p.instance_type, p.region, p.pricing_model) == ("m8g.xlarge", "us-east-1", "on_demand")
    )
    gpu_price = next(  # the accelerated types' offline snapshot prices GPU results too
        p.usd_per_hour
        for p in latest_prices(engine)
        if (p.instance_type, p.region, p.pricing_model) == ("g6e.xlarge", "us-east-1", "on_demand")
    )
    engine.dispose()
    expected = price / 3600 / 200 * 1e6  # 200 output tokens/s at the snapshot's hourly price
    assert float(best["m8g.xlarge"]["on_demand_usd_per_1m_output_tokens"]) == pytest.approx(expected)
    assert best["m8g.xlarge"]["output_throughput_per_accelerator"] == ""  # blank for CPU in the CSV
    assert float(best["g6e.xlarge"]["on_demand_usd_per_1m_output_tokens"]) == pytest.approx(
        gpu_price / 3600 / 3600 * 1e6
    )
    assert lake.fs.exists(f"{folder}/points.parquet") and lake.fs.exists(f"{folder}/version_deltas.csv")
    points = pq.read_table(f"{folder}/points.parquet").to_pylist()
    c2 = next(p for p in points if p["instance_type"] == "m8g.xlarge" and p["level_value"] == 2)
    # From the 400 request samples (order statistics), not the runs row's 500 ms without an interval.
    assert (c2["latency_interval_basis"], c2["latency_interval_n"], c2["run_ids"]) == (
        "requests",
        400,
        ["c/s/2"],
    )
    assert c2["p99_ttft_ms"] == pytest.approx(np.quantile(ttft * 1000, 0.99))
    assert c2["p99_ttft_ms_low"] < c2["p99_ttft_ms"] < c2["p99_ttft_ms_high"] < 2000
    html = Path(folder, "report.html").read_text()
    # Each chart the page draws (its spec, drawn by the inline Vega) is also a static SVG beside it.
    figures = sorted(p.stem for p in Path(folder, "figures").glob("*.svg"))
    assert {"throughput_vs_latency", "cost_at_slo", "version_trend"} <= set(figures)
    assert html.count('data-chart="chart-') == len(figures) and "g6e.xlarge" in html
    summary = json.loads(Path(folder, "summary.json").read_text())
    assert summary["rows"]["best_under_slo"] == 3 and summary["filter"]["tpot_p99_ms"] == 50
