"""The report model: per matrix point, medians over repeats, cost per 1M tokens at the run's price.

Plain functions over `runs` rows (dicts, as `Lake.read("runs").to_pylist()` gives them) and price
history, so every number can be checked by hand on a small table. Statistics come from the
standard library's `statistics` module.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any

from packaging.version import InvalidVersion, Version

# One matrix point: what a user compares across tiers, instance types and versions.
POINT_KEY = (
    "accelerator_type",
    "instance_type",
    "model",
    "quantization",
    "vllm_version",
    "level_kind",
    "level_value",
)
SERVER_KEY = POINT_KEY[:5]  # one server configuration: its levels are the throughput/latency curve
MEDIAN_METRICS = (
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    *(f"{stat}_{metric}_ms" for metric in ("ttft", "tpot", "itl", "e2el") for stat in ("p50", "p90", "p99")),
)
CV_METRICS = ("output_throughput", "p99_ttft_ms", "p99_tpot_ms")  # the ones version deltas judge
# Version deltas: a change is beyond run-to-run noise when it exceeds NOISE_CV_FACTOR times the larger
# coefficient of variation of the two points' repeats, and at least NOISE_FLOOR (points with one
# repeat have no CV of their own).
NOISE_CV_FACTOR = 2.0
NOISE_FLOOR = 0.05
SAMPLE_WARNING_REQUESTS = 1000  # below this per repeat, a p99 rests on fewer than 10 requests beyond it
SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class Price:
    instance_type: str
    region: str
    pricing_model: str  # on_demand | spot
    usd_per_hour: float
    effective_at: datetime
    source: str


def price_at(
    history: Iterable[Price], instance_type: str, region: str, pricing_model: str, when: datetime
) -> Price | None:
    """The price in force at `when`: the newest one that took effect at or before it."""
    valid = [
        p
        for p in history
        if (p.instance_type, p.region, p.pricing_model) == (instance_type, region, pricing_model)
        and p.effective_at <= when
    ]
    return max(valid, key=lambda p: p.effective_at, default=None)


def cost_per_million(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """USD per 1M tokens for a server that produces `tokens_per_s` for as long as it is paid for."""
    if usd_per_hour is None or not tokens_per_s:
        return None
    return usd_per_hour / SECONDS_PER_HOUR / tokens_per_s * 1_000_000


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation over mean; None with fewer than two repeats (nothing to compare)."""
    if len(values) < 2 or not statistics.fmean(values):
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def level_points(
    runs: Iterable[dict[str, Any]], prices: Sequence[Price], region: str
) -> list[dict[str, Any]]:
    """One row per matrix point over its successful repeats, with prices at the newest repeat's time.

    Throughput per accelerator is None (blank) for CPU rows, never zero.
    """
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if run.get("status") == "ok":
            groups[tuple(run[k] for k in POINT_KEY)].append(run)
    points = []
    for key, rows in sorted(groups.items(), key=lambda item: tuple(str(v) for v in item[0])):
        point: dict[str, Any] = dict(zip(POINT_KEY, key, strict=True))
        point |= {m: _median(rows, m) for m in MEDIAN_METRICS}
        point["repeats"] = len(rows)
        for metric in CV_METRICS:
            point[f"{metric}_cv"] = coefficient_of_variation(
                [r[metric] for r in rows if r.get(metric) is not None]
            )
        fewest = min(r["completed"] or 0 for r in rows)
        point["requests_per_repeat_min"] = fewest
        point["sample_warning"] = (
            f"p99 from {fewest} requests (< {SAMPLE_WARNING_REQUESTS})"
            if fewest < SAMPLE_WARNING_REQUESTS
            else None
        )
        accelerators = rows[0]["accelerator_count"]
        point["output_throughput_per_accelerator"] = (
            point["output_throughput"] / accelerators if accelerators and point["output_throughput"] else None
        )
        peaks = [r["server_rss_peak_bytes"] for r in rows if r.get("server_rss_peak_bytes") is not None]
        point["server_rss_peak_bytes"] = max(peaks) if peaks else None
        when = max(r["started_at"] for r in rows)
        for model in ("on_demand", "spot"):
            price = price_at(prices, point["instance_type"], region, model, when)
            point[f"{model}_usd_per_hour"] = price.usd_per_hour if price else None
            point[f"{model}_price_source"] = (
                f"{price.source}, {price.effective_at:%Y-%m-%d}" if price else None
            )
            point[f"{model}_usd_per_1m_output_tokens"] = cost_per_million(
                point[f"{model}_usd_per_hour"], point["output_throughput"]
            )
            point[f"{model}_usd_per_1m_total_tokens"] = cost_per_million(
                point[f"{model}_usd_per_hour"], point["total_token_throughput"]
            )
        points.append(point)
    return points


def best_under_slos(
    points: Iterable[dict[str, Any]], ttft_p99_ms: float | None = None, tpot_p99_ms: float | None = None
) -> list[dict[str, Any]]:
    """Per server configuration, the highest-throughput level whose p99 TTFT and TPOT hold the SLOs."""
    best: dict[tuple, dict[str, Any]] = {}
    for p in points:
        if ttft_p99_ms is not None and (p["p99_ttft_ms"] is None or p["p99_ttft_ms"] > ttft_p99_ms):
            continue
        if tpot_p99_ms is not None and (p["p99_tpot_ms"] is None or p["p99_tpot_ms"] > tpot_p99_ms):
            continue
        key = tuple(p[k] for k in SERVER_KEY)
        if key not in best or (p["output_throughput"] or 0) > (best[key]["output_throughput"] or 0):
            best[key] = p
    return [best[k] for k in sorted(best, key=lambda k: tuple(str(v) for v in k))]


def frontier(
    best: Sequence[dict[str, Any]], cost: str = "on_demand_usd_per_1m_output_tokens"
) -> list[dict[str, Any]]:
    """The price-performance frontier: best points no other point beats on both cost and p99 TPOT."""
    priced = [p for p in best if p.get(cost) is not None and p.get("p99_tpot_ms") is not None]

    def dominated(p: dict[str, Any]) -> bool:
        return any(
            q[cost] <= p[cost]
            and q["p99_tpot_ms"] <= p["p99_tpot_ms"]
            and (q[cost] < p[cost] or q["p99_tpot_ms"] < p["p99_tpot_ms"])
            for q in priced
        )

    return sorted((p for p in priced if not dominated(p)), key=lambda p: p[cost])


@dataclass(frozen=True)
class Retraction:
    run_id: str
    reason: str
    superseded_by: str | None


def split_retracted(
    runs: Iterable[dict[str, Any]], retractions: Iterable[Retraction]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(kept, retracted): retracted runs leave the default report and are listed with why."""
    by_id = {r.run_id: r for r in retractions}
    kept, gone = [], []
    for run in runs:
        r = by_id.get(run["run_id"])
        if r is None:
            kept.append(run)
        else:
            gone.append(run | {"retraction_reason": r.reason, "superseded_by": r.superseded_by})
    return kept, gone


def version_key(version: str | None) -> tuple[int, Version | str]:
    try:
        return (1, Version(version or ""))
    except InvalidVersion:
        return (0, version or "")


def noise_threshold(cv_a: float | None, cv_b: float | None) -> float:
    """The relative change within which two points are the same (see NOISE_CV_FACTOR)."""
    return max(NOISE_FLOOR, NOISE_CV_FACTOR * max(cv_a or 0.0, cv_b or 0.0))


def version_deltas(points: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each matrix point, the change from the previous vLLM version (semantic order) that has it.

    Regressions: a throughput drop or a p99 TTFT/TPOT rise beyond noise; improvements the reverse.
    """
    series: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        series[tuple(p[k] for k in POINT_KEY if k != "vllm_version")].append(p)
    deltas = []
    for key in sorted(series, key=lambda k: tuple(str(v) for v in k)):
        ordered = sorted(series[key], key=lambda p: version_key(p["vllm_version"]))
        for prev, cur in pairwise(ordered):
            row: dict[str, Any] = {k: cur[k] for k in POINT_KEY if k != "vllm_version"}
            row |= {"from_version": prev["vllm_version"], "to_version": cur["vllm_version"]}
            for metric, worse_when in (("output_throughput", -1), ("p99_ttft_ms", 1), ("p99_tpot_ms", 1)):
                before, after = prev.get(metric), cur.get(metric)
                if not before or after is None:  # every key on every row: tables take columns from row 1
                    row[f"{metric}_change"] = row[f"{metric}_noise_limit"] = row[f"{metric}_verdict"] = None
                    continue
                change = (after - before) / before
                limit = noise_threshold(prev.get(f"{metric}_cv"), cur.get(f"{metric}_cv"))
                row[f"{metric}_change"] = change
                row[f"{metric}_noise_limit"] = limit
                if abs(change) <= limit:
                    row[f"{metric}_verdict"] = "within noise"
                else:
                    row[f"{metric}_verdict"] = "regression" if change * worse_when > 0 else "improvement"
            deltas.append(row)
    return deltas
