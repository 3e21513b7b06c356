"""The report model: per matrix point, medians over repeats, cost per 1M tokens at the run's price.

Plain functions over `runs` rows (dicts, as `Lake.read("runs").to_pylist()` gives them) and price
history, so every number can be checked by hand on a small table. Statistics come from the
standard library's `statistics` module.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any

from packaging.version import InvalidVersion, Version

from accelbench.core.price import Price
from accelbench.core.slos import LIMITS, SAMPLE_WARNING_REQUESTS
from accelbench.core.workloads import DEFAULT_WORKLOAD
from accelbench.lake.schemas import IMPORTED_MODE, MEASURED_STATUSES
from accelbench.report.slos import Slos

# What the requests looked like (the profile, its endpoint, shared prefix, dataset and lengths): points are
# compared, across tiers or not, only with points of the same model on the same workload (COMPARISON_KEY).
WORKLOAD_KEY = ("workload", "endpoint", "prefix_len", "dataset", "input_len", "output_len", "range_ratio")
COMPARISON_KEY = ("model", *WORKLOAD_KEY)
# One server configuration on one workload on one host: its load levels are one throughput/latency
# curve. Workload (dataset, lengths), engine settings (the server half of the matrix key), TP and
# where it ran are all part of it, so different workloads or a local stand-in host never pool.
CONFIG_KEY = (
    "accelerator_type",
    "instance_type",
    "model",
    "quantization",
    "vllm_version",
    "dtype",
    "kv_cache_dtype",
    "max_model_len",
    "tensor_parallel_size",
    "engine_args",
    *WORKLOAD_KEY,
    "burstiness",
    "execution_mode",
    "host",
)
POINT_KEY = (*CONFIG_KEY, "level_kind", "level_value")  # one load level of one configuration
MEDIAN_METRICS = (
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "error_rate",
    *(f"{stat}_{metric}_ms" for metric in ("ttft", "tpot", "itl", "e2el") for stat in ("p50", "p90", "p99")),
)
CV_METRICS = ("output_throughput", "p99_ttft_ms", "p99_tpot_ms")  # the ones version deltas judge
# Prefix caching on vs off: the TTFT the shared prefix saves (both are judged with the same noise rule).
PREFIX_CACHING_METRICS = ("p50_ttft_ms", "p99_ttft_ms")
PREFIX_CACHING_ON, PREFIX_CACHING_OFF = "--enable-prefix-caching", "--no-enable-prefix-caching"
_CV_OF = tuple(dict.fromkeys((*CV_METRICS, *PREFIX_CACHING_METRICS)))  # each point's CVs over repeats
# Version deltas: a change is beyond run-to-run noise when it exceeds NOISE_CV_FACTOR times the larger
# coefficient of variation of the two points' repeats, and at least NOISE_FLOOR (points with one
# repeat have no CV of their own).
NOISE_CV_FACTOR = 2.0
NOISE_FLOOR = 0.05
SECONDS_PER_HOUR = 3600
GIB = 2**30
ON_INSTANCE = "instance"  # the host label of a run measured on the instance type it names
LOCAL_USE = (
    "A local result was measured on the machine that ran the campaign, not on the instance type it "
    "names: it is good for comparing vLLM versions, engine settings and workloads with each other on "
    "that same host, and for checking that a configuration runs at all; it is not a throughput or a "
    "price of the instance type, so it is never priced or ranked against instance results."
)


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


def measured_on_instance(run: dict[str, Any]) -> bool:
    """Whether the run measured the instance type it names. Rows from before host facts were recorded
    say nothing: a kubernetes run landed on its instance type by node selector, a local one did not."""
    recorded = run.get("measured_on_instance")
    return bool(recorded) if recorded is not None else run.get("execution_mode") != "local"


def measured_where(run: dict[str, Any]) -> str:
    """What was measured where, for every label a reader sees: "measured on m8g.xlarge (kubernetes)",
    "imported: g6e.xlarge as stated by the importer", or a local run's real host ("local: ...")."""
    if run.get("execution_mode") == IMPORTED_MODE:
        return f"imported: {run.get('instance_type')} as stated by the importer"
    host = run.get("host") or host_label(run)  # a point has its host label already
    if host != ON_INSTANCE:
        return str(host)
    return f"measured on {run.get('instance_type')} ({run.get('execution_mode') or 'mode not recorded'})"


def host_label(run: dict[str, Any]) -> str:
    """ "instance", or "local: <arch> <cpu model>, <n> vCPU[, <GPUs>]" for a run on a stand-in host (the
    GPUs a local GPU run really ran on, as their driver names them)."""
    if measured_on_instance(run):
        return ON_INSTANCE
    what = " ".join(str(run[k]) for k in ("host_architecture", "host_cpu_model") if run.get(k))
    if run.get("host_vcpus"):
        what += f", {run['host_vcpus']} vCPU"
    if run.get("host_accelerators"):
        what += f", {run['host_accelerators']}"
    return f"local: {what.strip(', ') or 'host not recorded'}"


# What the capacities table shows of a search's capacity probe: fields of the report's point, made by
# level_points from that probe's repeats, so medians and the cost per 1M tokens follow one rule.
AT_CAPACITY = (
    "point_id",
    "configuration_id",
    "repeats",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "on_demand_usd_per_hour",
    "spot_usd_per_hour",
    "on_demand_price_source",
    "spot_price_source",
    "on_demand_usd_per_1m_output_tokens",
    "on_demand_usd_per_1m_total_tokens",
    "spot_usd_per_1m_output_tokens",
    "spot_usd_per_1m_total_tokens",
)


def _search_of(row: dict[str, Any]) -> tuple[Any, Any]:
    """One search: its spec in one ingest (a `capacities` row and its probes' `runs` rows share both)."""
    return (row.get("spec_id"), row.get("dag_run_id"))


def capacity_point(
    capacity: dict[str, Any], probes: Iterable[dict[str, Any]], prices: Sequence[Price], region: str
) -> dict[str, Any] | None:
    """The report's point of the search's own probe at its capacity (the passing end of the bracket):
    medians over that probe's measured repeats, priced as any point is (at the newest repeat's time,
    only when measured on the instance). None without a capacity (client-limited, untrusted, below the
    lower bound) or without a measured repeat there (retracted, filtered out)."""
    load = capacity.get("capacity")
    if load is None:
        return None
    found = level_points((r for r in probes if r.get("level_value") == load), prices, region)
    return found[0] if len(found) == 1 else None  # one probe, one load: one point


def capacity_rows(
    capacities: list[dict[str, Any]],
    runs: Iterable[dict[str, Any]],
    prices: Sequence[Price],
    region: str,
) -> list[dict[str, Any]]:
    """The load searches' `capacities` rows as the report shows them: the capacity under the SLOs, the
    bracket it lies in, what limited it and what the search cost, and at the capacity the request and
    token throughput and the cost per 1M tokens from the search's own probe rows in `runs`
    (`capacity_point`); largest capacity first per model."""
    probes: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if run.get("search_step") is not None:
            probes[_search_of(run)].append(run)
    rows = []
    for c in capacities:
        passing, failing = c.get("bracket_passing"), c.get("bracket_failing")
        bracket = bracket_text(passing, failing)
        at = capacity_point(c, probes.get(_search_of(c), []), prices, region) or {}
        rows.append(
            {
                "model_short": short_model(c.get("model")),
                "model": c.get("model"),
                "instance_type": c.get("instance_type"),
                "vllm_version": c.get("vllm_version"),
                "search_variable": c.get("variable"),
                "capacity": c.get("capacity"),
                "bracket": bracket,
                "limiting_metric": c.get("limiting_metric"),
                "search_slos": slos_text(c),
                "search_outcome": c.get("outcome"),
                "search_precision": c.get("precision"),
                "probes": c.get("probes"),
                "server_s": c.get("server_s"),
                "host": host_label(c),
                "spec_id": c.get("spec_id"),
            }
            | {k: at.get(k) for k in AT_CAPACITY}
        )
    return sorted(rows, key=lambda r: (r["model_short"], -(r["capacity"] or 0), r["instance_type"] or ""))


def bracket_text(passing: float | None, failing: float | None) -> str | None:
    """ "[5, 6]": a search's bracket, an open end left blank ("[4, ]"); None when neither end exists."""
    ends = ["" if end is None else f"{end:g}" for end in (passing, failing)]
    return f"[{ends[0]}, {ends[1]}]" if any(ends) else None


def slos_text(capacity: dict[str, Any]) -> str | None:
    """ "p99 TTFT <= 2000 ms, error rate <= 1%": the SLOs a search held (`capacities.slo_*`; None in
    rows written before schema 5)."""
    held = []
    for limit in LIMITS:
        bound = capacity.get(f"slo_{limit.param}")
        if bound is not None:
            held.append(
                f"{limit.label} <= {bound:.0%}" if limit.unit == "%" else f"{limit.label} <= {bound:g} ms"
            )
    return ", ".join(held) or None


def searched_label(row: dict[str, Any]) -> str:
    """ "concurrency 5 [5, 6]": a capacities-table row's capacity as a load level, with its bracket."""
    kind = "concurrency" if row.get("search_variable") == "concurrency" else "rate"
    text = f"{level_label(kind, row['capacity'])} {row.get('bracket') or ''}".strip()
    return f"{text} (upper bound passed)" if row.get("search_outcome") == "upper_bound" else text


def mark_searched(
    points: Iterable[dict[str, Any]], capacities: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The points with `searched_capacity`: the label of each search whose capacity is that point
    (`searched_label`, "; " between several), else None. The capacity planner prefers these levels."""
    labels: dict[str, list[str]] = defaultdict(list)
    for c in capacities:
        if c.get("point_id") and c.get("capacity") is not None:
            text = searched_label(c)
            if text not in labels[c["point_id"]]:
                labels[c["point_id"]].append(text)
    return [p | {"searched_capacity": "; ".join(labels.get(p["point_id"], ())) or None} for p in points]


def models(runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each model the report's runs measured, with where it came from (`runs.model_origin`: a converted
    folder's provenance; "not recorded" for a model-store id or older rows) and how many runs: what a
    reader needs to trust a figure of a model nobody named by its full path."""
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for r in runs:
        seen[(str(r.get("model") or "?"), r.get("model_origin") or "not recorded")] += 1
    return [  # a converted folder's name is a hash: its origin names the model
        {
            "model_short": origin.split(" (")[0] if origin != "not recorded" else short_model(model),
            "model": model,
            "model_origin": origin,
            "runs": n,
        }
        for (model, origin), n in sorted(seen.items())
    ]


def short_model(model: str | None) -> str:
    """The id's last part ("Qwen2.5-0.5B-Instruct"): tables stay narrow; the full id is on hover."""
    return str(model or "?").rstrip("/").rsplit("/", 1)[-1]


def workload_label(p: dict[str, Any]) -> str:
    """ "random 128→32" (± the length range), what the point's requests looked like; with the profile's
    name in front for a named workload ("chat: random 256→128 ±50% (chat)"), the shared prefix and the
    chat endpoint when they apply."""
    dataset = p.get("dataset") or "unknown dataset"
    if p.get("input_len") is None or p.get("output_len") is None:
        return f"{dataset}, lengths not recorded"
    spread = f" ±{p['range_ratio']:.0%}" if p.get("range_ratio") else ""
    text = f"{dataset} {p['input_len']}→{p['output_len']}{spread}"
    if p.get("prefix_len"):
        text += f", {p['prefix_len']}-token shared prefix"
    if p.get("endpoint") == "chat":
        text += " (chat)"
    name = p.get("workload")
    return f"{name}: {text}" if name and name != DEFAULT_WORKLOAD else text


def configuration_label(p: dict[str, Any]) -> str:
    """ "m8g.xlarge · vLLM 0.32.0 · TP1 · bfloat16" plus quantization and engine arguments when set."""
    parts = [
        p["instance_type"],
        f"vLLM {p.get('vllm_version') or '?'}",
        f"TP{p.get('tensor_parallel_size') or 1}",
    ]
    parts += [str(p[k]) for k in ("dtype", "quantization", "engine_args") if p.get(k)]
    return " · ".join(parts)


def level_label(kind: str, value: float) -> str:
    """ "concurrency 16" or "4 req/s": the load level as the form asked for it."""
    return f"concurrency {value:g}" if kind == "concurrency" else f"{value:g} req/s"


def _short_id(values: tuple[Any, ...]) -> str:
    return hashlib.sha256(json.dumps([str(v) for v in values]).encode()).hexdigest()[:12]


# A campaign's rows from before workloads were recorded (schema < 5) ran the fixed profile on
# /v1/completions: they key as the same workload today's rows name. An old import's stay unknown.
_BEFORE_WORKLOADS = {"workload": DEFAULT_WORKLOAD, "endpoint": "completions"}


def _key_value(run: dict[str, Any], key: str) -> Any:
    if key == "host":
        return host_label(run)
    if key == "engine_args":
        return run.get(key) or ""  # rows from before the column: no extra arguments recorded
    if run.get(key) is None and key in _BEFORE_WORKLOADS and run.get("execution_mode") != IMPORTED_MODE:
        return _BEFORE_WORKLOADS[key]
    return run.get(key)


def error_rate(run: dict[str, Any]) -> float | None:
    done: int | None = run.get("completed")
    failed: int | None = run.get("failed")
    if done is None or failed is None or done + failed == 0:
        return None
    return failed / (done + failed)


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
            groups[tuple(_key_value(run, k) for k in POINT_KEY)].append(run | {"error_rate": error_rate(run)})
    points = []
    for key, rows in sorted(groups.items(), key=lambda item: tuple(str(v) for v in item[0])):
        point: dict[str, Any] = dict(zip(POINT_KEY, key, strict=True))
        point["point_id"] = _short_id(key)
        point["configuration_id"] = _short_id(key[: len(CONFIG_KEY)])
        point["comparison_id"] = _short_id(tuple(point[k] for k in COMPARISON_KEY))
        point["measured_on_instance"] = point["host"] == ON_INSTANCE
        point["measured_where"] = measured_where(point)
        point["configuration"] = configuration_label(point)
        point["model_short"] = short_model(point["model"])
        point["workload_profile"] = point["workload"]  # the name; `workload` says the requests in words
        point["workload"] = workload_label(point)
        point["comparison"] = f"{point['model_short']} · {point['workload']}"
        point["level"] = level_label(point["level_kind"], point["level_value"])
        point |= {m: _median(rows, m) for m in MEDIAN_METRICS}
        point["repeats"] = len(rows)
        point["campaigns"] = len({r.get("campaign_id") for r in rows})
        point["repeats_campaigns"] = f"{len(rows)} / {point['campaigns']}"
        # What ran: the kubelet's image digest or the local vLLM build, else the planned image.
        ran = {str(r.get("server_image_id") or r.get("image") or "?") for r in rows}
        point["ran"] = "; ".join(sorted(ran))
        for metric in _CV_OF:
            point[f"{metric}_cv"] = coefficient_of_variation(
                [r[metric] for r in rows if r.get(metric) is not None]
            )
        fewest = min(r.get("completed") or 0 for r in rows)
        point["requests_per_repeat_min"] = fewest
        point["sample_warning"] = (
            f"p99 from {fewest} requests (< {SAMPLE_WARNING_REQUESTS})"
            if fewest < SAMPLE_WARNING_REQUESTS
            else None
        )
        accelerators = rows[0].get("accelerator_count")
        point["output_throughput_per_accelerator"] = (
            point["output_throughput"] / accelerators if accelerators and point["output_throughput"] else None
        )
        # RssAnon: the server's own memory; total RSS also counts the mmapped weights' page cache.
        peaks = [
            r["server_rss_anon_peak_bytes"] for r in rows if r.get("server_rss_anon_peak_bytes") is not None
        ]
        point["server_memory_peak_gib"] = max(peaks) / GIB if peaks else None
        when = max(r["started_at"] for r in rows)
        for model in ("on_demand", "spot"):
            price = (
                price_at(prices, point["instance_type"], region, model, when)
                if point["measured_on_instance"]
                else None
            )
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


def cost_order(p: dict[str, Any]) -> tuple[Any, ...]:
    """Cheapest first by on-demand, then spot, per 1M output tokens; unpriced last, then by name."""
    inf = float("inf")
    od, spot = p.get("on_demand_usd_per_1m_output_tokens"), p.get("spot_usd_per_1m_output_tokens")
    return (
        od if od is not None else inf,
        spot if spot is not None else inf,
        p["configuration"],
        p["workload"],
    )


def best_under_slos(points: Iterable[dict[str, Any]], slos: Slos) -> list[dict[str, Any]]:
    """Per configuration, the highest-throughput level that meets every SLO; cheapest first."""
    best: dict[str, dict[str, Any]] = {}
    for p in points:
        if slos.misses(p):
            continue
        key = p["configuration_id"]
        if key not in best or (p["output_throughput"] or 0) > (best[key]["output_throughput"] or 0):
            best[key] = p
    return sorted(best.values(), key=cost_order)


HEADLINE_FIELDS = (
    "configuration",
    "level",
    "host",
    "measured_where",
    "measured_on_instance",
    "accelerator_type",
    "instance_type",
    "vllm_version",
    "level_kind",
    "level_value",
    "request_throughput",
    "output_throughput",
    "request_goodput",
    "on_demand_usd_per_1m_output_tokens",
    "on_demand_usd_per_1m_total_tokens",
    "spot_usd_per_1m_output_tokens",
    "spot_usd_per_1m_total_tokens",
    "p99_ttft_ms",
    "p99_tpot_ms",
    "p99_e2el_ms",
    "error_rate",
    "repeats",
    "campaigns",
    "sample_warning",
)


def headline(points: Sequence[dict[str, Any]], best: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answer, per model and workload: the cheapest configuration measured on its instance type
    that meets every SLO; where none does, say so; local results get their own, unpriced, line."""
    measured: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for p in points:  # per model and workload: one comparison (COMPARISON_KEY)
        measured[(p["model"], p["workload"], p["comparison_id"], p["measured_on_instance"])].add(
            p["configuration_id"]
        )
    chosen: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for p in best:
        chosen[(p["model"], p["workload"], p["comparison_id"], p["measured_on_instance"])].append(p)
    rows = []
    for key in sorted(measured, key=lambda k: (str(k[0]), k[1], k[2], not k[3])):
        model, workload, _, on_instance = key
        candidates = chosen.get(key, [])
        priced = [p for p in candidates if p.get("on_demand_usd_per_1m_output_tokens") is not None]
        row: dict[str, Any] = {
            "model": model,
            "model_short": short_model(model),
            "workload": workload,
            "configurations_measured": len(measured[key]),
            "configurations_meeting_slos": len(candidates),
        }
        top: dict[str, Any] | None
        if on_instance and priced:
            top = min(priced, key=cost_order)
            row["answer"] = "cheapest under the SLOs"
        elif on_instance:
            top = max(candidates, key=lambda p: p["output_throughput"] or 0) if candidates else None
            row["answer"] = "meets the SLOs, not priced" if top else "no configuration meets the SLOs"
        else:
            top = max(candidates, key=lambda p: p["output_throughput"] or 0) if candidates else None
            row["answer"] = (
                "local host only: not an instance measurement, not priced"
                if top
                else "local host only: nothing meets the SLOs"
            )
        row |= {k: (top or {}).get(k) for k in HEADLINE_FIELDS}
        rows.append(row)
    return rows


def frontier(
    best: Sequence[dict[str, Any]], cost: str = "on_demand_usd_per_1m_output_tokens"
) -> list[dict[str, Any]]:
    """The price-performance frontier per workload: best points measured on their instance that no
    other point of the same model and workload beats on cost and on every p99 (TTFT, TPOT, E2EL)."""
    latencies = ("p99_ttft_ms", "p99_tpot_ms", "p99_e2el_ms")
    priced = [p for p in best if p["measured_on_instance"] and p.get(cost) is not None]

    def as_good(q: dict[str, Any], p: dict[str, Any], key: str) -> bool:
        return p.get(key) is None or (q.get(key) is not None and q[key] <= p[key])

    def dominated(p: dict[str, Any]) -> bool:
        return any(
            q["comparison_id"] == p["comparison_id"]
            and q is not p
            and all(as_good(q, p, k) for k in (cost, *latencies))
            and any(q.get(k) is not None and p.get(k) is not None and q[k] < p[k] for k in (cost, *latencies))
            for q in priced
        )

    return sorted((p for p in priced if not dominated(p)), key=cost_order)


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


def judged(metric: str, before: dict[str, Any], after: dict[str, Any], worse_when: int) -> dict[str, Any]:
    """The change of `metric` from point `before` to point `after` (`<metric>_change`, relative), the noise
    limit of the two points' CVs over repeats (`<metric>_noise_limit`, see NOISE_CV_FACTOR) and the verdict
    (`<metric>_verdict`): "within noise", or beyond it "regression" when the change has the sign of
    `worse_when` (+1: higher is worse, a latency; -1: lower is worse, a throughput), else "improvement".
    Every key is there, None when there is nothing to compare: tables take their columns from row 1."""
    old, new = before.get(metric), after.get(metric)
    names = (f"{metric}_change", f"{metric}_noise_limit", f"{metric}_verdict")
    if not old or new is None:
        return dict.fromkeys(names)
    change = (new - old) / old
    limit = noise_threshold(before.get(f"{metric}_cv"), after.get(f"{metric}_cv"))
    if abs(change) <= limit:
        verdict = "within noise"
    else:
        verdict = "regression" if change * worse_when > 0 else "improvement"
    return dict(zip(names, (change, limit, verdict), strict=True))


def version_deltas(points: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each matrix point, the change from the previous vLLM version (semantic order) that has it.

    Regressions: a throughput drop or a p99 TTFT/TPOT rise beyond noise; improvements the reverse.
    """
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for p in points:
        series[tuple(p[k] for k in POINT_KEY if k != "vllm_version")].append(p)
    deltas = []
    for key in sorted(series, key=lambda k: tuple(str(v) for v in k)):
        ordered = sorted(series[key], key=lambda p: version_key(p["vllm_version"]))
        for prev, cur in pairwise(ordered):
            row: dict[str, Any] = {k: cur[k] for k in POINT_KEY if k != "vllm_version"}
            row |= {
                "configuration": cur["configuration"].replace(f" · vLLM {cur['vllm_version']}", ""),
                "model_short": cur["model_short"],
                "workload": cur["workload"],
                "level": cur["level"],
                "from_version": prev["vllm_version"],
                "to_version": cur["vllm_version"],
            }
            for metric, worse_when in (("output_throughput", -1), ("p99_ttft_ms", 1), ("p99_tpot_ms", 1)):
                row |= judged(metric, prev, cur, worse_when)
            deltas.append(row)
    return deltas


def prefix_caching_flag(engine_args: str | None) -> tuple[bool | None, str]:
    """(whether the arguments turn prefix caching on (True) or off (False), the other arguments): None when
    neither flag is there (the engine's default, which depends on its version). The last flag wins, as in
    vLLM's argument parser, which also reads `_` in a flag as `-`."""
    state: bool | None = None
    rest = []
    for arg in (engine_args or "").split():
        flag = "--" + arg[2:].replace("_", "-") if arg.startswith("--") else arg
        if flag == PREFIX_CACHING_ON:
            state = True
        elif flag == PREFIX_CACHING_OFF:
            state = False
        else:
            rest.append(arg)
    return state, " ".join(rest)


def prefix_caching(points: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pairs of points identical in every field of the point's key but the prefix-caching flag among the
    engine arguments (`--enable-prefix-caching` on, `--no-enable-prefix-caching` off), with their p50 and
    p99 TTFT and the change from off to on, judged by the version deltas' noise rule (`judged`): an
    "improvement" is a TTFT that caching lowers beyond run-to-run noise. A point with neither flag runs
    the engine's default and is not paired."""
    sides: dict[tuple[Any, ...], dict[bool, list[dict[str, Any]]]] = defaultdict(
        lambda: {True: [], False: []}
    )
    for p in points:
        state, rest = prefix_caching_flag(p.get("engine_args"))
        if state is not None:
            sides[tuple(rest if k == "engine_args" else p[k] for k in POINT_KEY)][state].append(p)
    rows = []
    for key in sorted(sides, key=lambda k: tuple(str(v) for v in k)):
        rest = key[POINT_KEY.index("engine_args")]
        for on in sides[key][True]:
            for off in sides[key][False]:
                row: dict[str, Any] = {k: on[k] for k in POINT_KEY} | {
                    "engine_args": rest,  # the arguments both share (the flag aside)
                    "configuration": configuration_label(on | {"engine_args": rest}),
                    "model_short": on["model_short"],
                    "workload": on["workload"],
                    "level": on["level"],
                    "point_id_on": on["point_id"],
                    "point_id_off": off["point_id"],
                    "repeats_on": on["repeats"],
                    "repeats_off": off["repeats"],
                }
                for metric in PREFIX_CACHING_METRICS:
                    row[f"{metric}_on"], row[f"{metric}_off"] = on.get(metric), off.get(metric)
                    row |= judged(metric, off, on, 1)  # from off to on: lower with caching is better
                rows.append(row)
    return sorted(
        rows, key=lambda r: (r["model_short"], r["workload"], r["configuration"], r["host"], r["level_value"])
    )
