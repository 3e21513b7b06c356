"""The report's points: per load level of a configuration, medians over its measured repeats (from any
campaign), priced at the newest repeat's time when measured on the instance type itself.

Plain functions over `runs` rows (dicts, as `Lake.read("runs").to_pylist()` gives them) and price
history, so every number can be checked by hand on a small table. Statistics come from the standard
library's `statistics` module.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from accelbench.core.price import Price
from accelbench.core.slos import SAMPLE_WARNING_REQUESTS
from accelbench.lake.schemas import MEASURED_STATUSES
from accelbench.report.hosts import ON_INSTANCE, measured_where
from accelbench.report.keys import COMPARISON_KEY, CONFIG_KEY, POINT_KEY, key_value, short_id
from accelbench.report.labels import configuration_label, level_label, short_model, workload_label
from accelbench.report.noise import coefficient_of_variation
from accelbench.report.pricing import price_columns

MEDIAN_METRICS = (
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "error_rate",
    *(f"{stat}_{metric}_ms" for metric in ("ttft", "tpot", "itl", "e2el") for stat in ("p50", "p90", "p99")),
)
# Each point's coefficient of variation over its repeats (`<metric>_cv`), for the metrics the version
# deltas and the prefix-caching pairs judge against noise.
CV_OF = ("output_throughput", "p99_ttft_ms", "p99_tpot_ms", "p50_ttft_ms")
GIB = 2**30


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def error_rate(run: dict[str, Any]) -> float | None:
    done: int | None = run.get("completed")
    failed: int | None = run.get("failed")
    if done is None or failed is None or done + failed == 0:
        return None
    return failed / (done + failed)


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


def _over_repeats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What a point's repeats give: medians, counts, what ran, CVs, the sample warning, per-accelerator
    throughput and peak memory."""
    found: dict[str, Any] = {m: _median(rows, m) for m in MEDIAN_METRICS}
    found["repeats"] = len(rows)
    found["campaigns"] = len({r.get("campaign_id") for r in rows})
    found["repeats_campaigns"] = f"{len(rows)} / {found['campaigns']}"
    # What ran: the kubelet's image digest or the local vLLM build, else the planned image.
    ran = {str(r.get("server_image_id") or r.get("image") or "?") for r in rows}
    found["ran"] = "; ".join(sorted(ran))
    for metric in CV_OF:
        found[f"{metric}_cv"] = coefficient_of_variation(
            [r[metric] for r in rows if r.get(metric) is not None]
        )
    fewest = min(r.get("completed") or 0 for r in rows)
    found["requests_per_repeat_min"] = fewest
    found["sample_warning"] = (
        f"p99 from {fewest} requests (< {SAMPLE_WARNING_REQUESTS})"
        if fewest < SAMPLE_WARNING_REQUESTS
        else None
    )
    accelerators = rows[0].get("accelerator_count")
    found["output_throughput_per_accelerator"] = (
        found["output_throughput"] / accelerators if accelerators and found["output_throughput"] else None
    )
    # RssAnon: the server's own memory; total RSS also counts the mmapped weights' page cache.
    peaks = [r["server_rss_anon_peak_bytes"] for r in rows if r.get("server_rss_anon_peak_bytes") is not None]
    found["server_memory_peak_gib"] = max(peaks) / GIB if peaks else None
    return found


def level_points(
    runs: Iterable[dict[str, Any]], prices: Sequence[Price], region: str
) -> list[dict[str, Any]]:
    """One row per point over its measured repeats (from any campaign), priced at the newest repeat's
    time, and only when the runs measured the instance type itself.

    Throughput per accelerator is None (blank) for CPU rows, never zero.
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if run.get("status") in MEASURED_STATUSES:
            groups[tuple(key_value(run, k) for k in POINT_KEY)].append(run | {"error_rate": error_rate(run)})
    points = []
    for key, rows in sorted(groups.items(), key=lambda item: tuple(str(v) for v in item[0])):
        point = _identity(key) | _over_repeats(rows)
        point |= price_columns(point, prices, region, max(r["started_at"] for r in rows))
        points.append(point)
    return points
