"""The report's points: per load level of a configuration, its figures over its measured repeats (from
any campaign), each with a 95% interval, priced at the newest repeat's time when measured on the
instance type itself.

Every figure shown is the estimate its interval is for (`accelbench.core.intervals`):

- throughputs (requests, goodput, output and total tokens per s): the mean over repeats, with a Student t
  interval over them (none from one repeat);
- latency percentiles (p50/p90/p99 of TTFT, TPOT, E2EL): over two or more repeats, the geometric mean of
  the repeats' percentiles with a t interval over their logs (`pooled_quantile_interval`); from one repeat,
  its percentile with a distribution-free order-statistic interval from its requests (`Samples`). Without
  request samples (imported runs, older lakes) the repeats' own percentiles (the runs rows) give the same
  t interval, and one repeat gives none: the method column says which. ITL percentiles always come from
  the repeats' rows (the requests table holds per-request ITL summaries, not the gaps);
- the error rate: failed over all requests of the repeats, with a Clopper-Pearson interval;
- costs per 1M tokens: the price over the throughput, the bounds from the throughput's bounds.

Plain functions over `runs` rows (dicts, as `Lake.read("runs").to_pylist()` gives them), price history
and request samples, so every number can be checked by hand on a small table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from accelbench.core.intervals import CONFIDENCE, Interval, mean_interval, pooled_quantile_interval
from accelbench.core.price import Price
from accelbench.core.slos import SAMPLE_WARNING_REQUESTS
from accelbench.lake.schemas import MEASURED_STATUSES
from accelbench.report.hosts import ON_INSTANCE, measured_where
from accelbench.report.keys import COMPARISON_KEY, CONFIG_KEY, POINT_KEY, key_value, short_id
from accelbench.report.labels import configuration_label, level_label, short_model, workload_label
from accelbench.report.noise import coefficient_of_variation
from accelbench.report.pricing import PRICING_MODELS, cost_per_million, price_columns
from accelbench.report.samples import Samples

THROUGHPUTS = ("request_throughput", "request_goodput", "output_throughput", "total_token_throughput")
PERCENTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
SAMPLED = ("ttft", "tpot", "e2el")  # from the requests table's samples; "itl" from the repeats' rows only
PERCENTILE_COLUMNS = tuple(
    f"{stat}_{metric}_ms" for metric in ("ttft", "tpot", "itl", "e2el") for stat in PERCENTILES
)
COST_COLUMNS = tuple(f"{m}_usd_per_1m_{t}_tokens" for m in PRICING_MODELS for t in ("output", "total"))
# The figures that carry `<column>_low` and `<column>_high`: the bounds of their 95% interval.
WITH_INTERVAL = (
    *THROUGHPUTS,
    *PERCENTILE_COLUMNS,
    "error_rate",
    *COST_COLUMNS,
    "output_throughput_per_accelerator",
)
# Each point's coefficient of variation over its repeats (`<metric>_cv`), for the metrics the version
# deltas and the prefix-caching pairs judge against noise.
CV_OF = ("output_throughput", "p99_ttft_ms", "p99_tpot_ms", "p50_ttft_ms")
GIB = 2**30


def error_rate(run: dict[str, Any]) -> float | None:
    done: int | None = run.get("completed")
    failed: int | None = run.get("failed")
    if done is None or failed is None or done + failed == 0:
        return None
    return failed / (done + failed)


def comparison_id(point: dict[str, Any], model: str | None = None) -> str:
    """The point's comparison id (COMPARISON_KEY), with `model` in place of its own: a quantized checkpoint
    is compared with the configurations of its reference model (accelbench.report.quality)."""
    fields = {k: point[k] for k in COMPARISON_KEY} | {"workload": point["workload_profile"]}
    return short_id(fields | ({"model": model} if model else {}))


def _identity(key: tuple[Any, ...]) -> dict[str, Any]:
    """A point's key fields, its ids and the labels made from them."""
    point: dict[str, Any] = dict(zip(POINT_KEY, key, strict=True))
    point["point_id"] = short_id(point)
    point["configuration_id"] = short_id({k: point[k] for k in CONFIG_KEY})
    point["comparison_id"] = short_id({k: point[k] for k in COMPARISON_KEY})
    point["measured_on_instance"] = point["host"] == ON_INSTANCE
    point["measured_where"] = measured_where(point)
    point["configuration"] = configuration_label(point)
    point["model_short"] = short_model(point["model"])
    point["workload_profile"] = point["workload"]  # the name; `workload` says the requests in words
    point["workload"] = workload_label(point)
    point["comparison"] = f"{point['model_short']} · {point['workload']}"
    point["level"] = level_label(point["level_kind"], point["level_value"])
    return point


def _bounds(column: str, interval: Interval) -> dict[str, Any]:
    return {column: interval.estimate, f"{column}_low": interval.low, f"{column}_high": interval.high}


def _values(rows: list[dict[str, Any]], key: str) -> list[float]:
    return [r[key] for r in rows if r.get(key) is not None]


def _from_repeats(values: list[float], q: float) -> Interval:
    """A percentile from the repeats' own percentiles (no request samples): with two or more, the t interval
    of `pooled_quantile_interval` (one value per repeat is all it uses); one gives no interval."""
    if len(values) >= 2:
        found = pooled_quantile_interval([[v] for v in values], q)
        return replace(found, method=f"{found.method}, no request samples")
    estimate = values[0] if values else None
    return Interval(estimate, None, None, CONFIDENCE, "1 repeat, no request samples: no interval")


def _percentiles(rows: list[dict[str, Any]], samples: Samples) -> dict[str, Any]:
    """Every percentile column with its bounds, and how the latency intervals were made: from the request
    samples when every repeat has them, else from the repeats' rows (`latency_interval`); the basis of
    the p99 TTFT interval (`latency_interval_basis`: "repeats" or "requests", `latency_interval_n`: how
    many), which says what more measurement would narrow it."""
    found: dict[str, Any] = {}
    run_ids = [r["run_id"] for r in rows if r.get("run_id")]
    method = basis = None
    n = None
    for metric in ("ttft", "tpot", "itl", "e2el"):
        groups = samples.groups(run_ids, metric) if metric in SAMPLED else []
        sampled = bool(groups) and len(groups) == len(rows)
        for stat, q in PERCENTILES.items():
            column = f"{stat}_{metric}_ms"
            interval = (
                pooled_quantile_interval(groups, q) if sampled else _from_repeats(_values(rows, column), q)
            )
            found |= _bounds(column, interval)
            if column == "p99_ttft_ms":
                method = interval.method
                basis = "requests" if sampled and len(groups) == 1 else "repeats"
                n = int(groups[0].size) if basis == "requests" else len(_values(rows, column)) or len(rows)
    found["latency_interval"] = method
    found["latency_interval_basis"] = basis
    found["latency_interval_n"] = n
    return found


def _error_rate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Failed over all requests of the repeats, with the Clopper-Pearson (exact binomial) interval."""
    from scipy import stats

    counted = [r for r in rows if error_rate(r) is not None]
    failed = sum(int(r["failed"]) for r in counted)
    total = failed + sum(int(r["completed"]) for r in counted)
    if not total:
        return dict.fromkeys(("error_rate", "error_rate_low", "error_rate_high"))
    ci = stats.binomtest(failed, total).proportion_ci(CONFIDENCE, method="exact")
    return {"error_rate": failed / total, "error_rate_low": float(ci.low), "error_rate_high": float(ci.high)}


def _over_repeats(rows: list[dict[str, Any]], samples: Samples) -> dict[str, Any]:
    """What a point's repeats give: estimates with intervals, counts, what ran, CVs, the sample warning,
    per-accelerator throughput and peak memory."""
    rows = sorted(rows, key=lambda r: r["started_at"])
    found: dict[str, Any] = {}
    throughput = None
    for metric in THROUGHPUTS:
        interval = mean_interval(_values(rows, metric))
        if interval.low is not None and interval.low < 0:  # a rate is never negative: the bound is 0
            interval = replace(interval, low=0.0)
        found |= _bounds(metric, interval)
        throughput = throughput or interval.method
    found["throughput_interval"] = throughput
    found |= _percentiles(rows, samples)
    found |= _error_rate(rows)
    found["repeats"] = len(rows)
    found["run_ids"] = [r["run_id"] for r in rows if r.get("run_id")]
    found["campaigns"] = len({r.get("campaign_id") for r in rows})
    found["repeats_campaigns"] = f"{len(rows)} / {found['campaigns']}"
    # What ran: the kubelet's image digest or the local vLLM build, else the planned image.
    ran = {str(r.get("server_image_id") or r.get("image") or "?") for r in rows}
    found["ran"] = "; ".join(sorted(ran))
    # A run whose host drifted (its recheck disagreed, accelbench.core.drift): the point's SLO verdicts
    # are undecided (accelbench.report.slos.limit_verdict).
    found["host_drift"] = (
        "; ".join(sorted({str(r["host_drift"]) for r in rows if r.get("host_drift")})) or None
    )
    for metric in CV_OF:
        found[f"{metric}_cv"] = coefficient_of_variation(_values(rows, metric))
    fewest = min(r.get("completed") or 0 for r in rows)
    found["requests_per_repeat_min"] = fewest
    found["sample_warning"] = (
        f"p99 from {fewest} requests (< {SAMPLE_WARNING_REQUESTS})"
        if fewest < SAMPLE_WARNING_REQUESTS
        else None
    )
    accelerators = rows[0].get("accelerator_count")
    for suffix in ("", "_low", "_high"):
        value = found[f"output_throughput{suffix}"]
        found[f"output_throughput_per_accelerator{suffix}"] = (
            value / accelerators
            if accelerators and value is not None and found["output_throughput"]
            else None
        )
    # RssAnon: the server's own memory; total RSS also counts the mmapped weights' page cache.
    peaks = _values(rows, "server_rss_anon_peak_bytes")
    found["server_memory_peak_gib"] = max(peaks) / GIB if peaks else None
    return found


def _cost_bounds(point: dict[str, Any]) -> dict[str, Any]:
    """USD per 1M tokens at the throughput's bounds: the higher throughput gives the lower cost."""
    out: dict[str, Any] = {}
    for model in PRICING_MODELS:
        usd = point.get(f"{model}_usd_per_hour")
        for tokens, throughput in (("output", "output_throughput"), ("total", "total_token_throughput")):
            low, high = point.get(f"{throughput}_low"), point.get(f"{throughput}_high")
            column = f"{model}_usd_per_1m_{tokens}_tokens"
            out[f"{column}_low"] = cost_per_million(usd, high) if high is not None and high > 0 else None
            out[f"{column}_high"] = cost_per_million(usd, low) if low is not None and low > 0 else None
    return out


def level_points(
    runs: Iterable[dict[str, Any]], prices: Sequence[Price], region: str, samples: Samples | None = None
) -> list[dict[str, Any]]:
    """One row per point over its measured repeats (from any campaign), priced at the newest repeat's
    time, and only when the runs measured the instance type itself; the latency intervals from the
    repeats' request `samples` where they have them (see the module docstring).

    Throughput per accelerator is None (blank) for CPU rows, never zero.
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if run.get("status") in MEASURED_STATUSES:
            groups[tuple(key_value(run, k) for k in POINT_KEY)].append(run | {"error_rate": error_rate(run)})
    points = []
    for key, rows in sorted(groups.items(), key=lambda item: tuple(str(v) for v in item[0])):
        point = _identity(key) | _over_repeats(rows, samples or Samples.EMPTY)
        point |= price_columns(point, prices, region, max(r["started_at"] for r in rows))
        point |= _cost_bounds(point)
        points.append(point)
    return points
