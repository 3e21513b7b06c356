"""Human names for the report's columns: CSV headers and HTML table headings come from here; and the
groups of columns that several HTML tables show.

Parquet keeps the machine names (snake_case, units in the suffix) for queries; people read the CSV in
a spreadsheet and the HTML in a browser, so both say what a column is and in which unit.
"""

from __future__ import annotations

import re

from accelbench.core.intervals import CONFIDENCE

LABELS: dict[str, str] = {
    "trace_lengths": "The trace's lengths, tokens",
    "trace": "Trace (its identity at 1x)",
    "headroom": "Headroom: times the recorded traffic held under the SLOs",
    "replicas": "Replicas for the traffic",
    "replicas_at_low": "Replicas at the headroom interval's low end",
    "on_demand_usd_per_month": "On-demand USD per month",
    "spot_usd_per_month": "Spot USD per month",
    "arrivals_by_time": "Arrivals per second over the replay",
    "ttft_by_time": "Slowest TTFT over the replay",
    "busiest_bin": "Busiest span",
    "slowest_bin": "Slowest span",
    "campaign_id": "Campaign",
    "campaign_date": "Campaign date (its first run)",
    "series_id": "Series (configuration less its vLLM version)",
    "vllm_change": "vLLM version change since the campaign before",
    "price_change": "Price change since the campaign before",
    "servers": "Servers",
    "billed_hours": "Billed instance-hours",
    "campaign_usd": "Cost of its priced servers, USD",
    "unpriced_servers": "Unpriced servers",
    "capacity_type": "Capacity type (the node's)",
    "pricing_model": "Price applied",
    "billed_s": "Billed seconds (node launch or scheduling to pod deletion)",
    "usd_per_hour": "USD per hour",
    "usd": "Cost, USD",
    "price_source": "Price source",
    "unpriced": "Unpriced because",
    "accelerator_type": "Tier",
    "instance_type": "Instance type",
    "model": "Model",
    "quantization": "Quantization",
    "vllm_version": "vLLM version",
    "level_kind": "Load level kind",
    "level_value": "Load level (concurrency or req/s)",
    "model_short": "Model",
    "model_origin": "Where the model came from",
    "runs": "Runs",
    "workload": "Workload (dataset input→output tokens)",
    "configuration": "Configuration",
    "level": "Load level",
    "host": "Measured on",
    "measured_where": "Measured where (imported: as stated)",
    "comparison": "Compared: model · workload",
    "comparison_id": "Comparison id",
    "tiers_compared": "Tiers compared",
    "not_compared_because": "Not compared because",
    "workload_differs": "What differs from the other tiers' workloads (this point vs theirs)",
    "workload_profile": "Workload profile",
    "endpoint": "Endpoint",
    "prefix_len": "Shared prefix tokens",
    "burstiness": "Burstiness (rate levels)",
    "measured_on_instance": "Measured on the instance type",
    "answer": "Answer",
    "on_instance": "Measured on the instance type",
    "runner_up": "Runner-up (next cheapest under the SLOs)",
    "runner_up_level": "Runner-up's load level",
    "runner_up_usd_per_1m_output_tokens": "Runner-up's on-demand USD / 1M output tokens",
    "runner_up_cost_change": "Runner-up costs more by",
    "runner_up_told_apart": "Runner-up told apart from the cheapest",
    "previous_report_id": "Previous report",
    "previous_configuration": "Previous answer",
    "previous_usd_per_1m_output_tokens": "Previous answer's on-demand USD / 1M output tokens",
    "changes": "Changed since the previous report",
    "change_text": "What changed",
    "configurations_measured": "Configurations measured",
    "configurations_meeting_slos": "Configurations meeting the SLOs",
    "point_id": "Point id",
    "configuration_id": "Configuration id",
    "execution_mode": "Execution mode",
    "dtype": "Data type",
    "kv_cache_dtype": "KV cache data type",
    "max_model_len": "Max model length",
    "tensor_parallel_size": "Tensor parallel size",
    "engine_args": "Extra engine arguments",
    "dataset": "Dataset",
    "input_len": "Input tokens",
    "output_len": "Output tokens",
    "range_ratio": "Length range ratio",
    "campaigns": "Campaigns",
    "repeats_campaigns": "Repeats / campaigns",
    "ran": "What ran (image digest or local build)",
    "repeats": "Repeats",
    "request_throughput": "Requests per s per replica (mean)",
    "request_goodput": "Goodput, requests per s (mean)",
    "error_rate": "Error rate (all requests)",
    "output_throughput": "Output tokens per s (mean)",
    "total_token_throughput": "Total tokens per s (mean)",
    "output_throughput_per_accelerator": "Output tokens per s per accelerator (blank on CPU)",
    "output_throughput_cv": "Output tokens per s, CV over repeats",
    "p50_ttft_ms_cv": "p50 TTFT, CV over repeats",
    "p99_ttft_ms_cv": "p99 TTFT, CV over repeats",
    "p99_tpot_ms_cv": "p99 TPOT, CV over repeats",
    "requests_per_repeat_min": "Requests per repeat (fewest)",
    "sample_warning": "Sample-size warning",
    "server_memory_peak_gib": "Peak server memory, GiB (anonymous RSS)",
    "on_demand_usd_per_hour": "On-demand USD per hour",
    "on_demand_price_source": "On-demand price source",
    "on_demand_usd_per_1m_output_tokens": "On-demand USD / 1M output tokens",
    "on_demand_usd_per_1m_total_tokens": "On-demand USD / 1M total tokens",
    "spot_usd_per_hour": "Spot USD per hour",
    "spot_price_source": "Spot price source",
    "spot_usd_per_1m_output_tokens": "Spot USD / 1M output tokens",
    "spot_usd_per_1m_total_tokens": "Spot USD / 1M total tokens",
    "ab_comparison": "A/B comparison (its variants; the first is the baseline)",
    "baseline": "Baseline variant",
    "variant": "Variant",
    "differs": "What the variant changes",
    "ab_verdict": "Verdict",
    "repeats_baseline": "Baseline's repeats",
    "repeats_variant": "Variant's repeats",
    "from_version": "From vLLM version",
    "to_version": "To vLLM version",
    "run_id": "Run id",
    "retraction_reason": "Retraction reason",
    "runtime": "Runtime",
    "version": "Runtime version",
    "decision": "Decision",
    "reason": "Reason",
    "decided_by": "Decided by",
    "decided_at": "Decided at",
    "regressions": "Regressions it answers",
    "superseded_by": "Superseded by run",
    "ttft_p99_ms": "SLO: p99 TTFT at most (ms)",
    "tpot_p99_ms": "SLO: p99 TPOT at most (ms)",
    "e2el_p99_ms": "SLO: p99 E2E latency at most (ms)",
    "max_error_rate": "SLO: error rate at most",
    "region": "Price region",
    "search_variable": "Load searched",
    "capacity": "Capacity under the SLOs",
    "bracket": "Bracket [passing, failing]",
    "limiting_metric": "Limiting metric",
    "search_slos": "SLOs held (every repeat)",
    "search_outcome": "Search outcome",
    "search_precision": "Search precision",
    "probes": "Probes",
    "server_s": "Server-seconds under load",
    "spec_id": "Spec id",
    "searched_capacity": "Searched capacity [bracket]",
    "point_id_on": "Point id, prefix caching on",
    "point_id_off": "Point id, prefix caching off",
    "repeats_on": "Repeats, prefix caching on",
    "repeats_off": "Repeats, prefix caching off",
    "warmups_in_window": "Warm-ups in the measured window (runs before per-level warm-ups ran apart)",
    # intervals (accelbench.report.points) and the three-valued SLO verdicts (accelbench.report.slos)
    "run_ids": "Run ids (oldest first)",
    "throughput_interval": "Throughput interval: method",
    "latency_interval": "Latency percentile interval: method (p99 TTFT's)",
    "latency_interval_basis": "Latency interval from (repeats or requests)",
    "latency_interval_n": "Latency interval from how many (repeats or requests per repeat)",
    "slo_verdict": "SLO verdict",
    "slo_why": "SLO verdict: why (undecided: what would decide it)",
    "undecided_above": "Undecided higher levels (what would decide them)",
    "undecided": "Undecided levels that could change the answer",
    # quality against the reference configuration (accelbench.report.quality, report/tables/quality.py)
    "quality_reference": "Quality: reference model",
    "quality_gate": "Quality gate",
    "quality_why": "Quality gate: why",
    "quality_skipped": "Left out by the quality gate",
    "server_quantization": "Quantization the server reported",
    "kl_mean": "Top-20 KL divergence from the reference, mean (nats)",
    "top1_agreement": "Top-1 agreement with the reference",
    "accuracy": "Accuracy (generated exact-answer task)",
    "reference_accuracy": "Reference's accuracy",
    "accuracy_ratio": "Accuracy, share of the reference's",
    "on_pareto_front": "On the cost-quality Pareto front",
}
# The changes tested between two points (accelbench.report.noise: the version deltas, prefix caching, the
# A/B comparisons).
LABELS |= (
    {
        f"{metric}_{suffix}": f"{name}: {what}"
        for metric, name in (
            ("output_throughput", "Output tokens per s"),
            ("p99_ttft_ms", "p99 TTFT"),
            ("p50_ttft_ms", "p50 TTFT"),
            ("p99_tpot_ms", "p99 TPOT"),
            ("p50_tpot_ms", "p50 TPOT"),
            ("p99_e2el_ms", "p99 E2EL"),
        )
        for suffix, what in (
            ("finding", "change [95% interval], q-value"),
            ("change_low", "change, 95% interval low"),
            ("change_high", "change, 95% interval high"),
            ("q", "q-value (Benjamini-Hochberg)"),
        )
    }
    | {
        f"{metric}_{suffix}": f"{name}: {what}"  # how much to measure (report/tables/resolution.py)
        for metric, name in (("output_throughput", "Output tokens per s"), ("p99_ttft_ms", "p99 TTFT"))
        for suffix, what in (
            ("spread", "spread between repeats (one repeat's typical deviation)"),
            ("resolves", "the smallest change these repeats resolve"),
            ("repeats_for_10pct", "repeats that resolve ±10%"),
            ("resolution", "what these repeats resolve"),
        )
    }
    | {
        "requests": "Requests per repeat (fewest completed)",
        "change_method": "How each change was tested",
        "repeats_from": "Repeats, from version",
        "repeats_to": "Repeats, to version",
    }
)
# Columns that several HTML tables show together (each table's own list is in its module, report/tables/).
COSTS = (
    "on_demand_usd_per_1m_output_tokens",
    "spot_usd_per_1m_output_tokens",
    "on_demand_usd_per_1m_total_tokens",
    "spot_usd_per_1m_total_tokens",
)
LATENCIES = ("p99_ttft_ms", "p99_tpot_ms", "p99_e2el_ms")
WHAT = ("configuration", "model_short", "workload", "level")
RATES = ("request_throughput", "output_throughput", "request_goodput")
SIZE = ("error_rate", "server_memory_peak_gib", "repeats_campaigns")
_METRIC_NAMES = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2E latency"}
_PERCENTILE = re.compile(r"^p(\d+)_(ttft|tpot|itl|e2el)_ms$")
_DELTA = re.compile(r"^(.+)_(change|verdict)$")
_BOUND = re.compile(r"^(.+)_(low|high)$")  # a figure's interval bounds (accelbench.report.points)
_CACHING = re.compile(r"^(.+)_(on|off)$")  # the prefix-caching table's two sides of a metric


def label(column: str) -> str:
    """The heading for `column`; percentile and delta columns are named by rule, not listed."""
    if column in LABELS:
        return LABELS[column]
    if m := _PERCENTILE.match(column):
        return f"p{m[1]} {_METRIC_NAMES[m[2]]}, ms"
    if m := _BOUND.match(column):
        return f"{label(m[1])}: {CONFIDENCE:.0%} interval, {m[2]}"
    if m := _DELTA.match(column):
        return f"{label(m[1])}: {m[2]}"
    if (m := _CACHING.match(column)) and (pm := _PERCENTILE.match(m[1])):
        return f"p{pm[1]} {_METRIC_NAMES[pm[2]]}, prefix caching {m[2]}, ms"
    return column.replace("_", " ").capitalize()
