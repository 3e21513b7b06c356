"""Every point: one load level of one configuration, its figures and their intervals over its measured repeats
(`accelbench.report.builder.build_points` makes them: every other table starts from them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.core.slos import SAMPLE_WARNING_REQUESTS
from accelbench.report.columns import COSTS, WHAT
from accelbench.report.model import Point
from accelbench.report.records import Record
from accelbench.report.table import Inputs, Section, Table


def _points(inputs: Inputs) -> list[Point]:
    return inputs.points


def _sample_warning(rows: Sequence[Record]) -> Mapping[str, Any]:
    return {"sample_warning_requests": SAMPLE_WARNING_REQUESTS}


TABLE = Table(
    name="points",
    row=Point,
    compute=_points,
    columns=(
        *WHAT,
        "measured_where",
        "host",
        "execution_mode",
        "repeats",
        "campaigns",
        "request_throughput",
        "output_throughput",
        "output_throughput_cv",
        "request_goodput",
        *(f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for s in ("p50", "p99")),
        "error_rate",
        "slo_verdict",
        "latency_interval",
        *COSTS,
        "output_throughput_per_accelerator",
        "server_memory_peak_gib",
        "sample_warning",
        "on_demand_price_source",
        "spot_price_source",
        "ran",
    ),
    section=Section(
        heading="All points",
        table_id="points-table",
        variables=_sample_warning,
        text="""\
<p>Each figure over the measured repeats (a repeat with some failed requests counts; its error rate says
how many): throughputs their mean, latency percentiles the geometric mean of the repeats' percentiles (one
repeat: its own), the error rate over all their requests. {{ intervals_short }}
A level with fewer than {{ sample_warning_requests }} requests per repeat carries a sample-size warning:
its p99 rests on few requests. The SLO verdict is meets, misses or undecided (the limit inside the
interval); hover over it for why and what more measurement would decide it.</p>""",
    ),
)
