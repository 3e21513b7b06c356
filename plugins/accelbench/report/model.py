"""The report's typed model: what its stages pass each other instead of dicts.

A `Point` is one load level of one `Configuration` with its figures over the measured repeats, each figure
an `Interval` (estimate, low, high, method), its `Cost` on-demand and spot, its `QualityGrade` and its SLO
verdict: built once, by `accelbench.report.points.build_points`, from the lake's rows. Tables compute typed
rows from points; only the file writer (`accelbench.report.records`) turns them into the flat columns the
Parquet, CSV and page have always had (an interval as `<name>`, `<name>_low`, `<name>_high`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Final

from accelbench.core.intervals import CONFIDENCE, Interval, SloVerdict

__all__ = [
    "NO_INTERVAL",
    "AtCapacity",
    "Capacity",
    "Configuration",
    "Cost",
    "Interval",
    "MetricChange",
    "Point",
    "PointKey",
    "QualityGrade",
]

NO_INTERVAL = Interval(None, None, None, CONFIDENCE, "")

# How `accelbench.report.records.record` writes a field that is itself a dataclass: its fields beside the
# parent's ("inline"), or each under the parent's prefix ("prefix": "on_demand_" -> on_demand_usd_per_hour).
INLINE: Final = {"inline": True}


@dataclass(frozen=True, slots=True)
class Configuration:
    """One server configuration on one workload on one host, measured one way (`keys.CONFIG_KEY`, in its
    order): its load levels are one throughput/latency curve. `workload_profile` is the workload's name
    (the key's `workload`); a point's `workload` is that workload in words."""

    accelerator_type: str | None
    instance_type: str | None
    model: str | None
    quantization: str | None
    vllm_version: str | None
    dtype: str | None
    kv_cache_dtype: str | None
    max_model_len: int | None
    tensor_parallel_size: int | None
    engine_args: str | None
    workload_profile: str | None
    endpoint: str | None
    prefix_len: int | None
    dataset: str | None
    input_len: int | None
    output_len: int | None
    range_ratio: float | None
    trace_name: str | None
    trace_sha256: str | None
    trace_requests: int | None
    trace_duration_s: float | None
    trace_mean_rate: float | None
    burstiness: float | None
    execution_mode: str | None
    host: str | None
    warmups_in_window: bool | None

    def key_fields(self) -> dict[str, object]:
        """The fields by the key's names (`keys.CONFIG_KEY`: the workload's name as `workload`), which the
        ids hash and the labels read."""
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        return {("workload" if k == "workload_profile" else k): v for k, v in found.items()}


@dataclass(frozen=True, slots=True)
class PointKey:
    """A point's key fields as the files show them (`keys.POINT_KEY`, in its order): its configuration's
    with the workload in words, and the load level. What a table keys a row of points by."""

    accelerator_type: str | None
    instance_type: str | None
    model: str | None
    quantization: str | None
    vllm_version: str | None
    dtype: str | None
    kv_cache_dtype: str | None
    max_model_len: int | None
    tensor_parallel_size: int | None
    engine_args: str | None
    workload: str | None
    endpoint: str | None
    prefix_len: int | None
    dataset: str | None
    input_len: int | None
    output_len: int | None
    range_ratio: float | None
    trace_name: str | None
    trace_sha256: str | None
    trace_requests: int | None
    trace_duration_s: float | None
    trace_mean_rate: float | None
    burstiness: float | None
    execution_mode: str | None
    host: str | None
    warmups_in_window: bool | None
    level_kind: str | None
    level_value: float | None


@dataclass(frozen=True, slots=True)
class Cost:
    """What a point costs under one pricing model: the hourly price in force when it was measured, where
    that price came from, and USD per 1M output and total tokens with the intervals the throughput's give
    (all None unless measured on the instance type itself)."""

    usd_per_hour: float | None = None
    price_source: str | None = None
    usd_per_1m_output_tokens: Interval = NO_INTERVAL
    usd_per_1m_total_tokens: Interval = NO_INTERVAL


@dataclass(frozen=True, slots=True)
class QualityGrade:
    """A configuration's quality against its reference (`accelbench.report.quality`), with its quality gate
    (pass / fail / undecided); every field None where it was not measured or no gate applies."""

    quality_reference: str | None = None
    quality_gate: str | None = None
    quality_why: str | None = None
    kl_mean: Interval = NO_INTERVAL
    top1_agreement: float | None = None
    accuracy: Interval = NO_INTERVAL
    accuracy_ratio: Interval = NO_INTERVAL
    server_quantization: str | None = None


@dataclass(frozen=True, slots=True)
class AtCapacity:
    """What the capacities table shows of a search's capacity probe: the estimates of the report's point made
    from that probe's repeats (`accelbench.report.points`), so the cost per 1M tokens follows one rule."""

    point_id: str | None = None
    configuration_id: str | None = None
    repeats: int | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    on_demand_usd_per_hour: float | None = None
    spot_usd_per_hour: float | None = None
    on_demand_price_source: str | None = None
    spot_price_source: str | None = None
    on_demand_usd_per_1m_output_tokens: float | None = None
    on_demand_usd_per_1m_total_tokens: float | None = None
    spot_usd_per_1m_output_tokens: float | None = None
    spot_usd_per_1m_total_tokens: float | None = None


@dataclass(frozen=True, slots=True)
class Capacity:
    """A load search's result as the capacities table shows it (`accelbench.report.searches`): the capacity
    under the SLOs, its bracket and interval, what limited it, what the search cost, and at the capacity
    the figures and costs of the search's own probe there."""

    model_short: str
    model: str | None
    instance_type: str | None
    vllm_version: str | None
    search_variable: str | None
    capacity: float | None
    bracket: str | None
    limiting_metric: str | None
    search_slos: str | None
    search_outcome: str | None
    search_precision: float | None
    probes: int | None
    server_s: float | None
    host: str
    spec_id: str | None
    accelerator_type: str | None
    capacity_low: float | None
    capacity_high: float | None
    trace_sha256: str | None
    trace: str | None
    at: AtCapacity = field(default=AtCapacity(), metadata=INLINE)


@dataclass(frozen=True, slots=True)
class MetricChange:
    """One metric's change between two points, tested (`accelbench.report.noise`): the relative change with
    its interval, its q-value across the table's family, its verdict (regression / improvement / no change
    / undecided) and the finding in words. Written under the metric's name: `<metric>_change`,
    `<metric>_change_low`, ..., `<metric>_finding`."""

    change: Interval = NO_INTERVAL
    q: float | None = None
    verdict: str | None = None
    finding: str | None = None


def metric_change(row: object, metric: str) -> MetricChange:
    """The `MetricChange` a judged row holds under `metric`'s name (KeyError: none such)."""
    found = getattr(row, metric, None)
    if not isinstance(found, MetricChange):
        raise KeyError(metric)
    return found


def prefixed(prefix: str) -> dict[str, str]:
    """A part written under `prefix` (`accelbench.report.records`)."""
    return {"prefix": prefix}


@dataclass(frozen=True, slots=True)
class Point:
    """One load level of one configuration: its figures over its measured repeats (from any campaign),
    each with its 95% interval, priced at the newest repeat's time when measured on the instance type
    itself, with its configuration's quality, its searched capacity, its SLO verdict and its start-up.
    The module docstring of `accelbench.report.points` says how each figure and interval is made."""

    config: Configuration = field(metadata=INLINE)
    level_kind: str
    level_value: float
    point_id: str
    configuration_id: str
    comparison_id: str
    measured_on_instance: bool
    measured_where: str
    configuration: str
    model_short: str
    workload: str  # the workload in words; its name is `config.workload_profile`
    comparison: str
    level: str
    request_throughput: Interval
    request_goodput: Interval
    output_throughput: Interval
    total_token_throughput: Interval
    throughput_interval: str | None
    p50_ttft_ms: Interval
    p90_ttft_ms: Interval
    p99_ttft_ms: Interval
    p50_tpot_ms: Interval
    p90_tpot_ms: Interval
    p99_tpot_ms: Interval
    p50_itl_ms: Interval
    p90_itl_ms: Interval
    p99_itl_ms: Interval
    p50_e2el_ms: Interval
    p90_e2el_ms: Interval
    p99_e2el_ms: Interval
    latency_interval: str | None
    latency_interval_basis: str | None
    latency_interval_n: int | None
    error_rate: Interval
    repeats: int
    run_ids: tuple[str, ...]
    campaigns: int
    repeats_campaigns: str
    ran: str
    host_drift: str | None
    output_throughput_cv: float | None
    p99_ttft_ms_cv: float | None
    p99_tpot_ms_cv: float | None
    p50_ttft_ms_cv: float | None
    requests_per_repeat_min: int
    sample_warning: str | None
    output_throughput_per_accelerator: Interval
    server_memory_peak_gib: float | None
    on_demand: Cost = field(default=Cost(), metadata=prefixed("on_demand_"))
    spot: Cost = field(default=Cost(), metadata=prefixed("spot_"))
    searched_capacity: str | None = None
    quality: QualityGrade = field(default=QualityGrade(), metadata=INLINE)
    slo_verdict: SloVerdict | None = None
    slo_why: str | None = None
    startup_s: float | None = None

    # The key fields a point is read by most: its configuration's.
    @property
    def model(self) -> str | None:
        return self.config.model

    @property
    def instance_type(self) -> str | None:
        return self.config.instance_type

    @property
    def accelerator_type(self) -> str | None:
        return self.config.accelerator_type

    @property
    def vllm_version(self) -> str | None:
        return self.config.vllm_version

    @property
    def host(self) -> str | None:
        return self.config.host

    def key(self) -> PointKey:
        """Its key fields as the files show them: the workload in words."""
        c = self.config
        return PointKey(
            accelerator_type=c.accelerator_type,
            instance_type=c.instance_type,
            model=c.model,
            quantization=c.quantization,
            vllm_version=c.vllm_version,
            dtype=c.dtype,
            kv_cache_dtype=c.kv_cache_dtype,
            max_model_len=c.max_model_len,
            tensor_parallel_size=c.tensor_parallel_size,
            engine_args=c.engine_args,
            workload=self.workload,
            endpoint=c.endpoint,
            prefix_len=c.prefix_len,
            dataset=c.dataset,
            input_len=c.input_len,
            output_len=c.output_len,
            range_ratio=c.range_ratio,
            trace_name=c.trace_name,
            trace_sha256=c.trace_sha256,
            trace_requests=c.trace_requests,
            trace_duration_s=c.trace_duration_s,
            trace_mean_rate=c.trace_mean_rate,
            burstiness=c.burstiness,
            execution_mode=c.execution_mode,
            host=c.host,
            warmups_in_window=c.warmups_in_window,
            level_kind=self.level_kind,
            level_value=self.level_value,
        )

    def figure(self, name: str) -> Interval:
        """The figure called `name` (a column's name: "p99_ttft_ms", "error_rate", ...) with its interval."""
        found = getattr(self, name)
        if not isinstance(found, Interval):
            raise TypeError(f"{name} is not a figure of a point")
        return found

    def estimate(self, name: str) -> float | None:
        """A figure's estimate, or a plain number's value ("startup_s")."""
        found = getattr(self, name)
        return found.estimate if isinstance(found, Interval) else found
