"""A small runs table and price list worked out by hand: the report tests' shared numbers."""

from __future__ import annotations

from datetime import UTC, datetime

from accelbench.core.price import Price
from accelbench.report.points import GIB


def run_row(
    instance: str,
    tier: str,
    level: int,
    repeat: int,
    out: float,
    total: float,
    ttft: float,
    tpot: float,
    **kw,
):
    """One row of the lake's runs table; `kw` replaces or adds columns."""
    return {
        "accelerator_type": tier,
        "instance_type": instance,
        "model": "org/model",
        "quantization": None,
        "vllm_version": "0.32.0",
        "level_kind": "concurrency",
        "level_value": float(level),
        "repeat": repeat,
        "status": "ok",
        "request_throughput": out / 100,
        "output_throughput": out,
        "total_token_throughput": total,
        "p99_ttft_ms": ttft,
        "p99_tpot_ms": tpot,
        "completed": 200,
        "failed": 0,
        "accelerator_count": 1 if tier == "gpu" else 0,
        "server_rss_peak_bytes": 3 * GIB,  # total RSS: the weights' page cache too; never reported
        "server_rss_anon_peak_bytes": GIB + repeat * GIB // 2,
        "started_at": datetime(2026, 11, 10 + repeat, tzinfo=UTC),
        "campaign_id": "c1",
        "dataset": "random",
        "input_len": 128,
        "output_len": 32,
        "range_ratio": 0.0,
        "tensor_parallel_size": 1,
        "execution_mode": "kubernetes",
        "measured_on_instance": True,
    } | kw


RUNS = [
    run_row("m8g.xlarge", "cpu", 1, 0, 100, 150, 100, 20),
    run_row("m8g.xlarge", "cpu", 1, 1, 120, 170, 200, 30),
    run_row("m8g.xlarge", "cpu", 2, 0, 200, 260, 500, 35),
    run_row("m8g.xlarge", "cpu", 2, 1, 999, 999, 1, 1, status="failed"),  # never counted
    run_row("m8g.xlarge", "cpu", 4, 0, 300, 380, 2500, 40),  # beyond the TTFT SLO
    run_row("g6e.xlarge", "gpu", 16, 0, 3600, 4000, 300, 15, completed=1200),
    run_row("r8g.large", "cpu", 1, 0, 50, 70, 90, 10),
]
JULY = datetime(2026, 7, 20, tzinfo=UTC)
PRICES = [
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.18, JULY, "snapshot"),
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.20, datetime(2026, 11, 12, tzinfo=UTC), "api"),  # later
    Price("m8g.xlarge", "us-east-1", "spot", 0.07, datetime(2026, 11, 1, tzinfo=UTC), "spot history"),
    Price("m8g.xlarge", "eu-west-1", "on_demand", 9.99, JULY, "other region"),
    Price("g6e.xlarge", "us-east-1", "on_demand", 1.861, JULY, "snapshot"),
    Price("r8g.large", "us-east-1", "on_demand", 0.05, JULY, "snapshot"),
]
