"""Version over version: for each point, the change from the previous vLLM version that has it, tested
from the requests of each point's repeats (`accelbench.report.noise`, `accelbench.core.changes`), with
the false discovery rate controlled across the table. The regression gate reads this table's rule."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from packaging.version import InvalidVersion, Version

from accelbench.core.changes import FDR
from accelbench.report.keys import POINT_KEY
from accelbench.report.model import MetricChange, Point, metric_change, prefixed
from accelbench.report.noise import Sides, TestedChanges, compare_pairs, noise_variables
from accelbench.report.records import record
from accelbench.report.samples import Samples
from accelbench.report.table import Inputs, Section, Table

# The metrics a version delta judges, and the sign of a worse change: a throughput drop, a latency rise.
JUDGED = (("output_throughput", -1), ("p99_ttft_ms", 1), ("p99_tpot_ms", 1))
CV_METRICS = tuple(metric for metric, _ in JUDGED)


def version_key(version: str | None) -> tuple[int, Version | str]:
    try:
        return (1, Version(version or ""))
    except InvalidVersion:
        return (0, version or "")


def _same(a: str | None, b: str) -> bool:
    try:
        return a is not None and Version(a) == Version(b)
    except InvalidVersion:
        return a == b


@dataclass(frozen=True, slots=True)
class VersionDelta:
    """A point's change from the previous vLLM version that has it: the point's key but its version (as the
    files show it: the workload in words), the two versions and their repeats, each judged metric's change
    (`MetricChange`, written under its name) and how each was tested."""

    accelerator_type: str | None
    instance_type: str | None
    model: str | None
    quantization: str | None
    dtype: str | None
    kv_cache_dtype: str | None
    max_model_len: int | None
    tensor_parallel_size: int | None
    engine_args: str | None
    workload: str
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
    level_kind: str
    level_value: float
    configuration: str
    model_short: str
    level: str
    from_version: str | None
    to_version: str | None
    repeats_from: int
    repeats_to: int
    host_drift: str | None
    output_throughput: MetricChange = field(metadata=prefixed("output_throughput_"))
    p99_ttft_ms: MetricChange = field(metadata=prefixed("p99_ttft_ms_"))
    p99_tpot_ms: MetricChange = field(metadata=prefixed("p99_tpot_ms_"))
    change_method: str = ""

    def change(self, metric: str) -> MetricChange:
        """The change of a judged metric (JUDGED) by its name."""
        return metric_change(self, metric)


def _delta(prev: Point, cur: Point, found: TestedChanges) -> VersionDelta:
    c = cur.config
    return VersionDelta(
        accelerator_type=c.accelerator_type,
        instance_type=c.instance_type,
        model=c.model,
        quantization=c.quantization,
        dtype=c.dtype,
        kv_cache_dtype=c.kv_cache_dtype,
        max_model_len=c.max_model_len,
        tensor_parallel_size=c.tensor_parallel_size,
        engine_args=c.engine_args,
        workload=cur.workload,
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
        level_kind=cur.level_kind,
        level_value=cur.level_value,
        configuration=cur.configuration.replace(f" · vLLM {cur.vllm_version}", ""),
        model_short=cur.model_short,
        level=cur.level,
        from_version=prev.vllm_version,
        to_version=cur.vllm_version,
        repeats_from=prev.repeats,
        repeats_to=cur.repeats,
        host_drift=_drift(prev, cur),
        output_throughput=found.changes["output_throughput"],
        p99_ttft_ms=found.changes["p99_ttft_ms"],
        p99_tpot_ms=found.changes["p99_tpot_ms"],
        change_method=found.method,
    )


def _drift(prev: Point, cur: Point) -> str | None:
    return "; ".join(d for d in (prev.host_drift, cur.host_drift) if d) or None


def version_deltas(
    points: Iterable[Point],
    runs: Iterable[Mapping[str, Any]] = (),
    samples: Samples = Samples.EMPTY,
    *,
    touching: str | None = None,
    fdr: float = FDR,
) -> list[VersionDelta]:
    """Per point, the change from the previous vLLM version that has it (its key but the version equal),
    each metric tested from the request samples of the points' repeats (`run_ids`; `runs` give the
    repeats' own figures where there are no samples), judged as one family across all the deltas; with
    `touching`, only the deltas into or out of that version (the gate's family).

    Regressions: a throughput drop or a p99 TTFT/TPOT rise beyond the minimum effect at the FDR;
    improvements the reverse."""
    series: dict[tuple[Any, ...], list[Point]] = defaultdict(list)
    for p in points:
        fields = p.config.key_fields() | {"level_kind": p.level_kind, "level_value": p.level_value}
        series[tuple(fields[k] for k in POINT_KEY if k != "vllm_version")].append(p)
    pairs: list[tuple[Point, Point]] = []
    for key in sorted(series, key=lambda k: tuple(str(v) for v in k)):
        ordered = sorted(series[key], key=lambda p: version_key(p.vllm_version))
        for prev, cur in pairwise(ordered):
            if touching is not None and not (
                _same(cur.vllm_version, touching) or _same(prev.vllm_version, touching)
            ):
                continue
            pairs.append((prev, cur))
    sides = [Sides(record(prev), record(cur), _drift(prev, cur)) for prev, cur in pairs]
    return [
        _delta(prev, cur, found)
        for (prev, cur), found in zip(pairs, compare_pairs(sides, JUDGED, runs, samples, fdr), strict=True)
    ]


def _rows(inputs: Inputs) -> list[VersionDelta]:
    return version_deltas(inputs.points, inputs.runs, inputs.samples)


TABLE = Table(
    name="version_deltas",
    row=VersionDelta,
    compute=_rows,
    columns=(
        "configuration",
        "model_short",
        "workload",
        "level",
        "host",
        "from_version",
        "to_version",
        *(f"{m}_{s}" for m in CV_METRICS for s in ("finding", "verdict")),
        "change_method",
    ),
    section=Section(
        unmeasured="two `versions`",
        heading="Version-over-version changes",
        anchor="deltas",
        table_id="deltas-table",
        variables=noise_variables,
        text="""\
<p>For each point, the change from the previous vLLM version that has it, with its {{ confidence }}
interval and q-value. Each repeat gives one figure (its percentile of its own requests, or its
throughput); the two versions' repeats are compared on a log scale (the change is the ratio of their
geometric means) by a pooled two-sample t test, whose spread holds both the requests' sampling noise and
the host's. The null hypothesis is a change of at most {{ min_effect }}, so smaller real changes are never
flagged; the q-values control the false discovery rate (Benjamini-Hochberg) across every row and metric
of the table. A regression or an improvement has q &le; {{ fdr }}; "no change" means the interval lies
within &plusmn;{{ min_effect }}; otherwise "no change beyond &plusmn;X%" is the smallest change these
samples resolve (more repeats, or more prompts per level, resolve smaller ones). The method column says
what each metric was tested from: a point without request samples (imported runs, older lakes) is tested
from its repeats' own figures; with one repeat on each side a percentile is tested from the requests
alone (the host's noise not measured) and a throughput not at all.</p>""",
    ),
)
