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

Plain functions from `runs` rows (dicts, as `Lake.read("runs").to_pylist()` gives them), price history
and request samples to typed points (`accelbench.report.model.Point`), so every number can be checked by
hand on a small table. `accelbench.report.builder.build_points` is the one builder the report uses: these
points with their searched capacity, quality, SLO verdict and start-up.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from accelbench.core.intervals import CONFIDENCE, Interval, mean_interval, pooled_quantile_interval
from accelbench.core.price import Price, price_at
from accelbench.core.slos import SAMPLE_WARNING_REQUESTS
from accelbench.lake.schemas import MEASURED_STATUSES, LakeRow
from accelbench.report.hosts import ON_INSTANCE, measured_where
from accelbench.report.keys import COMPARISON_KEY, CONFIG_KEY, POINT_KEY, key_value, short_id
from accelbench.report.labels import configuration_label, level_label, short_model, workload_label
from accelbench.report.model import NO_INTERVAL, Configuration, Cost, Point
from accelbench.report.noise import coefficient_of_variation
from accelbench.report.pricing import PRICING_MODELS, cost_per_million
from accelbench.report.samples import Samples

THROUGHPUTS = ("request_throughput", "request_goodput", "output_throughput", "total_token_throughput")
PERCENTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
SAMPLED = ("ttft", "tpot", "e2el")  # from the requests table's samples; "itl" from the repeats' rows only
PERCENTILE_COLUMNS = tuple(
    f"{stat}_{metric}_ms" for metric in ("ttft", "tpot", "itl", "e2el") for stat in PERCENTILES
)
COST_COLUMNS = tuple(f"{m}_usd_per_1m_{t}_tokens" for m in PRICING_MODELS for t in ("output", "total"))
# The figures that carry `<column>_low` and `<column>_high` in the files: the bounds of their 95% interval.
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


def error_rate(run: Mapping[str, Any]) -> float | None:
    done: int | None = run.get("completed")
    failed: int | None = run.get("failed")
    if done is None or failed is None or done + failed == 0:
        return None
    return failed / (done + failed)


def comparison_id(config: Configuration, model: str | None = None) -> str:
    """The comparison id (COMPARISON_KEY) of a point of `config`, with `model` in place of its own: a
    quantized checkpoint is compared with the configurations of its reference model
    (accelbench.report.quality)."""
    key = config.key_fields()
    return short_id({k: key[k] for k in COMPARISON_KEY} | ({"model": model} if model else {}))


def _values(rows: list[LakeRow], key: str) -> list[float]:
    return [r[key] for r in rows if r.get(key) is not None]


def _from_repeats(values: list[float], q: float) -> Interval:
    """A percentile from the repeats' own percentiles (no request samples): with two or more, the t interval
    of `pooled_quantile_interval` (one value per repeat is all it uses); one gives no interval."""
    if len(values) >= 2:
        found = pooled_quantile_interval([[v] for v in values], q)
        return replace(found, method=f"{found.method}, no request samples")
    estimate = values[0] if values else None
    return Interval(estimate, None, None, CONFIDENCE, "1 repeat, no request samples: no interval")


@dataclass(frozen=True, slots=True)
class _LatencyBasis:
    """How the latency intervals were made (the p99 TTFT's): `method`, from "repeats" or "requests" (`basis`),
    and from how many (`n`)."""

    method: str | None = None
    basis: str | None = None
    n: int | None = None


def _percentiles(rows: list[LakeRow], samples: Samples) -> tuple[dict[str, Interval], _LatencyBasis]:
    """Every percentile with its interval, and how the latency intervals were made: from the request
    samples when every repeat has them, else from the repeats' rows (`latency_interval`); the basis of
    the p99 TTFT interval (`latency_interval_basis`: "repeats" or "requests", `latency_interval_n`: how
    many), which says what more measurement would narrow it."""
    found: dict[str, Interval] = {}
    how = _LatencyBasis()
    run_ids = [r["run_id"] for r in rows if r.get("run_id")]
    for metric in ("ttft", "tpot", "itl", "e2el"):
        groups = samples.groups(run_ids, metric) if metric in SAMPLED else []
        sampled = bool(groups) and len(groups) == len(rows)
        for stat, q in PERCENTILES.items():
            column = f"{stat}_{metric}_ms"
            interval = (
                pooled_quantile_interval(groups, q) if sampled else _from_repeats(_values(rows, column), q)
            )
            found[column] = interval
            if column == "p99_ttft_ms":
                basis = "requests" if sampled and len(groups) == 1 else "repeats"
                n = groups[0].count if basis == "requests" else len(_values(rows, column)) or len(rows)
                how = _LatencyBasis(interval.method, basis, n)
    return found, how


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Clopper-Pearson (exact binomial) interval of k successes in n, from its beta-quantile form: the
    interval `scipy.stats.binomtest(k, n).proportion_ci(method="exact")` finds by root-finding on the
    binomial CDF (tests/unit/test_report_intervals.py checks they agree), ~50x faster: a year's report
    prices tens of thousands of points, and that root-finding was 45% of its time."""
    from scipy import stats

    tail = (1 - confidence) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - tail, k + 1, n - k))
    return low, high


def _error_rate(rows: list[LakeRow]) -> Interval:
    """Failed over all requests of the repeats, with the Clopper-Pearson (exact binomial) interval."""
    counted = [r for r in rows if error_rate(r) is not None]
    failed = sum(int(r["failed"]) for r in counted)
    total = failed + sum(int(r["completed"]) for r in counted)
    if not total:
        return NO_INTERVAL
    low, high = clopper_pearson(failed, total)
    return Interval(failed / total, low, high, CONFIDENCE, "")


def _throughputs(rows: list[LakeRow]) -> tuple[dict[str, Interval], str | None]:
    """Each throughput's mean over the repeats with its t interval (a rate is never negative: a bound under
    0 is 0), and the method of the first that has one."""
    found: dict[str, Interval] = {}
    method = None
    for metric in THROUGHPUTS:
        interval = mean_interval(_values(rows, metric))
        if interval.low is not None and interval.low < 0:
            interval = replace(interval, low=0.0)
        found[metric] = interval
        method = method or interval.method
    return found, method


def _per_accelerator(throughput: Interval, accelerators: int | None) -> Interval:
    """Output tokens per s per accelerator: None (blank) for CPU rows, never zero."""
    if not accelerators or not throughput.estimate:
        return NO_INTERVAL
    low, high = (None if v is None else v / accelerators for v in (throughput.low, throughput.high))
    return replace(throughput, estimate=throughput.estimate / accelerators, low=low, high=high)


def _cost(price: Price | None, output: Interval, total: Interval) -> Cost:
    """USD per 1M tokens at the throughput's estimate and bounds: the higher throughput gives the lower
    cost."""
    if price is None:
        return Cost()
    usd = price.usd_per_hour

    def per_million(throughput: Interval) -> Interval:
        low, high = throughput.high, throughput.low
        return Interval(
            cost_per_million(usd, throughput.estimate),
            cost_per_million(usd, low) if low is not None and low > 0 else None,
            cost_per_million(usd, high) if high is not None and high > 0 else None,
            CONFIDENCE,
            "",
        )

    return Cost(
        usd, f"{price.source}, {price.effective_at:%Y-%m-%d}", per_million(output), per_million(total)
    )


def _costs(
    config: Configuration,
    on_instance: bool,
    figures: dict[str, Interval],
    prices: Sequence[Price],
    region: str,
    when: datetime,
) -> dict[str, Cost]:
    """On-demand and spot, at the price in force `when` the newest repeat ran; none unless measured on the
    instance type itself (a stand-in host's throughput is not the instance type's)."""
    out = {}
    for model in PRICING_MODELS:
        price = price_at(prices, config.instance_type or "", region, model, when) if on_instance else None
        out[model] = _cost(price, figures["output_throughput"], figures["total_token_throughput"])
    return out


def _point(
    key: tuple[Any, ...], rows: list[LakeRow], samples: Samples, prices: Sequence[Price], region: str
) -> Point:
    """The point of `key` (POINT_KEY's values) over its measured repeats `rows`."""
    rows = sorted(rows, key=lambda r: r["started_at"])
    fields = dict(zip(POINT_KEY, key, strict=True))
    config = Configuration(*(fields[k] for k in CONFIG_KEY))
    on_instance = fields["host"] == ON_INSTANCE
    labelled = fields | {"measured_on_instance": on_instance}
    throughputs, throughput_method = _throughputs(rows)
    percentiles, latency = _percentiles(rows, samples)
    figures = throughputs | percentiles
    campaigns = len({r.get("campaign_id") for r in rows})
    fewest = min(r.get("completed") or 0 for r in rows)
    peaks = _values(rows, "server_rss_anon_peak_bytes")
    costs = _costs(config, on_instance, figures, prices, region, max(r["started_at"] for r in rows))
    model_short, workload = short_model(config.model), workload_label(fields)
    return Point(
        config=config,
        level_kind=fields["level_kind"],
        level_value=fields["level_value"],
        point_id=short_id(fields),
        configuration_id=short_id({k: fields[k] for k in CONFIG_KEY}),
        comparison_id=short_id({k: fields[k] for k in COMPARISON_KEY}),
        measured_on_instance=on_instance,
        measured_where=measured_where(labelled),
        configuration=configuration_label(labelled),
        model_short=model_short,
        workload=workload,
        comparison=f"{model_short} · {workload}",
        level=level_label(fields["level_kind"], fields["level_value"]),
        request_throughput=figures["request_throughput"],
        request_goodput=figures["request_goodput"],
        output_throughput=figures["output_throughput"],
        total_token_throughput=figures["total_token_throughput"],
        throughput_interval=throughput_method,
        p50_ttft_ms=figures["p50_ttft_ms"],
        p90_ttft_ms=figures["p90_ttft_ms"],
        p99_ttft_ms=figures["p99_ttft_ms"],
        p50_tpot_ms=figures["p50_tpot_ms"],
        p90_tpot_ms=figures["p90_tpot_ms"],
        p99_tpot_ms=figures["p99_tpot_ms"],
        p50_itl_ms=figures["p50_itl_ms"],
        p90_itl_ms=figures["p90_itl_ms"],
        p99_itl_ms=figures["p99_itl_ms"],
        p50_e2el_ms=figures["p50_e2el_ms"],
        p90_e2el_ms=figures["p90_e2el_ms"],
        p99_e2el_ms=figures["p99_e2el_ms"],
        latency_interval=latency.method,
        latency_interval_basis=latency.basis,
        latency_interval_n=latency.n,
        error_rate=_error_rate(rows),
        repeats=len(rows),
        run_ids=tuple(r["run_id"] for r in rows if r.get("run_id")),
        campaigns=campaigns,
        repeats_campaigns=f"{len(rows)} / {campaigns}",
        # What ran: the kubelet's image digest or the local vLLM build, else the planned image.
        ran="; ".join(sorted({str(r.get("server_image_id") or r.get("image") or "?") for r in rows})),
        # A run whose host drifted (its recheck disagreed, accelbench.core.drift): the point's SLO verdicts
        # are undecided (accelbench.report.slos.limit_verdict).
        host_drift="; ".join(sorted({str(r["host_drift"]) for r in rows if r.get("host_drift")})) or None,
        output_throughput_cv=coefficient_of_variation(_values(rows, "output_throughput")),
        p99_ttft_ms_cv=coefficient_of_variation(_values(rows, "p99_ttft_ms")),
        p99_tpot_ms_cv=coefficient_of_variation(_values(rows, "p99_tpot_ms")),
        p50_ttft_ms_cv=coefficient_of_variation(_values(rows, "p50_ttft_ms")),
        requests_per_repeat_min=fewest,
        sample_warning=(
            f"p99 from {fewest} requests (< {SAMPLE_WARNING_REQUESTS})"
            if fewest < SAMPLE_WARNING_REQUESTS
            else None
        ),
        output_throughput_per_accelerator=_per_accelerator(
            figures["output_throughput"], rows[0].get("accelerator_count")
        ),
        # RssAnon: the server's own memory; total RSS also counts the mmapped weights' page cache.
        server_memory_peak_gib=max(peaks) / GIB if peaks else None,
        on_demand=costs["on_demand"],
        spot=costs["spot"],
    )


def level_points(
    runs: Iterable[LakeRow], prices: Sequence[Price], region: str, samples: Samples | None = None
) -> list[Point]:
    """One point per load level of a configuration over its measured repeats (from any campaign), priced at
    the newest repeat's time, and only when the runs measured the instance type itself; the latency
    intervals from the repeats' request `samples` where they have them (see the module docstring). Their
    searched capacity, quality, verdict and start-up are `accelbench.report.builder`'s."""
    groups: dict[tuple[Any, ...], list[LakeRow]] = defaultdict(list)
    for run in runs:
        if run.get("status") in MEASURED_STATUSES:
            groups[tuple(key_value(run, k) for k in POINT_KEY)].append(run | {"error_rate": error_rate(run)})
    return [
        _point(key, rows, samples or Samples.EMPTY, prices, region)
        for key, rows in sorted(groups.items(), key=lambda item: tuple(str(v) for v in item[0]))
    ]
