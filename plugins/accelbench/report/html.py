"""The report as one self-contained HTML file: tables, inline SVG plots, inline CSS, no external link.

It opens offline from the lake, a laptop or the Airflow "Benchmarks" view alike.
"""

from __future__ import annotations

import math
from dataclasses import asdict, fields
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from typing import Any

from jinja2 import Environment

from accelbench.core.slos import SAMPLE_WARNING_REQUESTS
from accelbench.report.columns import label
from accelbench.report.model import (
    CV_METRICS,
    LOCAL_USE,
    NOISE_CV_FACTOR,
    NOISE_FLOOR,
    PREFIX_CACHING_METRICS,
    PREFIX_CACHING_OFF,
    PREFIX_CACHING_ON,
)
from accelbench.report.pages import environment
from accelbench.report.planner import planner_context
from accelbench.report.plots import PLOTS

_COSTS = (
    "on_demand_usd_per_1m_output_tokens",
    "spot_usd_per_1m_output_tokens",
    "on_demand_usd_per_1m_total_tokens",
    "spot_usd_per_1m_total_tokens",
)
_LATENCIES = ("p99_ttft_ms", "p99_tpot_ms", "p99_e2el_ms")
_WHAT = ("configuration", "model_short", "workload", "level")
_RATES = ("request_throughput", "output_throughput", "request_goodput")
_SIZE = ("error_rate", "server_memory_peak_gib", "repeats_campaigns")
COLUMNS: dict[str, tuple[str, ...]] = {
    "cross_tier": (
        "accelerator_type",
        "instance_type",
        "measured_where",
        "vllm_version",
        "tensor_parallel_size",
        "ran",
        "configuration",
        "level",
        "output_throughput",
        "output_throughput_per_accelerator",
        "request_throughput",
        *_COSTS,
        *_LATENCIES,
        "error_rate",
        "repeats_campaigns",
    ),
    "not_compared": (
        "model_short",
        "workload",
        "accelerator_type",
        "measured_where",
        "configuration",
        "level",
        "not_compared_because",
        "workload_differs",
        "output_throughput",
        "on_demand_usd_per_1m_output_tokens",
    ),
    "headline": (
        "model_short",
        "workload",
        "answer",
        "configuration",
        "level",
        "request_throughput",
        *_COSTS,
        *_LATENCIES,
        "error_rate",
        "measured_where",
    ),
    # Every best point was measured on its instance type (imported: as stated); the headline, cross-tier and
    # points tables say where. The table must fit 1,328 px (the Benchmarks view's frame) without scrolling.
    "best": (*_WHAT, *_RATES, *_COSTS[:2], *_LATENCIES, *_SIZE, "sample_warning"),
    "local": (*_WHAT, "host", *_RATES, *_LATENCIES, *_SIZE),  # never priced: no cost columns
    "frontier": (*_WHAT, "on_demand_usd_per_1m_output_tokens", *_LATENCIES, "output_throughput"),
    "points": (
        *_WHAT,
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
        *_COSTS,
        "output_throughput_per_accelerator",
        "server_memory_peak_gib",
        "sample_warning",
        "on_demand_price_source",
        "spot_price_source",
        "ran",
    ),
    "version_deltas": (
        "configuration",
        "model_short",
        "workload",
        "level",
        "host",
        "from_version",
        "to_version",
        *(f"{m}_{s}" for m in CV_METRICS for s in ("change", "verdict")),
    ),
    "prefix_caching": (
        "model_short",
        "workload",
        "configuration",
        "host",
        "level",
        *(f"{m}_{s}" for m in PREFIX_CACHING_METRICS for s in ("on", "off", "change", "verdict")),
        "repeats_on",
        "repeats_off",
    ),
    "retracted": ("run_id", "instance_type", "vllm_version", "retraction_reason", "superseded_by"),
    "models": ("model_short", "model_origin", "runs"),
    "capacities": (
        "model_short",
        "instance_type",
        "vllm_version",
        "search_variable",
        "capacity",
        "bracket",
        "request_throughput",  # at the capacity: the search's own probe there, priced like a point
        "output_throughput",
        *_COSTS,
        "limiting_metric",
        "search_slos",
        "search_outcome",
        "search_precision",
        "probes",
        "server_s",
        "host",
    ),
}
TABLE_OF = {  # HTML table -> report table
    "headline": "headline",
    "cross_tier": "cross_tier",
    "not_compared": "not_compared",
    "models": "models",
    "best": "best_under_slo",
    "local": "local_results",
    "frontier": "frontier",
    "points": "points",
    "version_deltas": "version_deltas",
    "prefix_caching": "prefix_caching",
    "retracted": "retracted",
    "capacities": "capacities",
}


_FRACTIONS = ("_change", "_cv", "_noise_limit", "error_rate")


def _cell(value: Any, column: str = "") -> str:
    """Blank for missing values (never 0 or 'None'); fractions as percentages; sensible precision."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if column.endswith(_FRACTIONS) and isinstance(value, int | float):
        if column.endswith("_change"):
            return f"{value:+.1%}"
        return f"{value:.2%}" if column.endswith("error_rate") and 0 < value < 0.01 else f"{value:.1%}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{value:.0f}"
        return f"{value:.4g}" if abs(value) < 1 else f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return str(value)


def _cell_class(value: Any, column: str) -> str:
    if column.endswith("_verdict") and value in ("regression", "improvement"):
        return str(value)
    if column == "sample_warning" and value:
        return "text warn"
    if column == "host" and value and value != "instance":
        return "text local"
    if column == "measured_where" and str(value).startswith("local"):
        return "text local"
    return "" if isinstance(value, int | float) and not isinstance(value, bool) else "text"


def _environment() -> Environment:
    env = environment().overlay()
    env.filters |= {"cell": _cell, "cell_class": _cell_class, "label": label}
    return env


def render_html(
    rid: str,
    tables: dict[str, list[dict[str, Any]]],
    report_filter: Any,
    runs_read: int,
    generated_at: datetime,
) -> str:
    """`report_filter` is a ReportFilter (dataclass): its fields are listed at the top of the page."""
    shown_filters = []
    for f in fields(report_filter):
        value = getattr(report_filter, f.name)
        if isinstance(value, list):
            value = ", ".join(value) or "all"
        shown_filters.append((label(f.name), "none" if value is None else value))
    plots = [(pid, title, fn(tables[source], report_filter)) for pid, (title, fn, source) in PLOTS.items()]
    sources = sorted(
        {
            p[k]
            for p in tables["best_under_slo"]
            for k in ("on_demand_price_source", "spot_price_source")
            if p.get(k)
        }
    )
    groups = []  # the cross-tier rows come by comparison group: one table each
    for cid, rows in groupby(tables["cross_tier"], itemgetter("comparison_id")):
        members = list(rows)
        first = members[0]
        groups.append(
            {"id": cid, "label": first["comparison"], "tiers": first["tiers_compared"], "rows": members}
        )
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            report_id=rid,
            cross_tier_groups=groups,
            generated_at=f"{generated_at:%Y-%m-%d %H:%M:%S %Z}",
            filters=shown_filters,
            counts={"runs": runs_read, "retracted": len(tables["retracted"])},
            tables={name: tables.get(source) or [] for name, source in TABLE_OF.items()},
            columns=COLUMNS,
            price_sources=sources,
            local_use=LOCAL_USE,
            slos=report_filter.slos,
            planner=planner_context(tables["points"], **asdict(report_filter.slos)),
            plots=plots,
            noise_floor=f"{NOISE_FLOOR:.0%}",
            noise_factor=f"{NOISE_CV_FACTOR:g}",
            caching_flags={"on": PREFIX_CACHING_ON, "off": PREFIX_CACHING_OFF},
            sample_warning_requests=SAMPLE_WARNING_REQUESTS,
        )
    )
