"""pyarrow schemas of the lake's tables; SCHEMA_VERSION changes whenever a column does."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from accelbench.core.startup_phases import FIGURES, PHASES

# 2: runs.source_uri, runs.matrix_key; 3: the engine settings of a point, where it ran (host_*,
# measured_on_instance, server_image_id) and why the server died (server_exit_code, server_log_tail);
# 4: a load search's probes (runs.search_step, runs.search_phase) and its result (the capacities table);
# 5: runs.burstiness (a rate level's arrivals), the workload (runs.workload, endpoint, prefix_len,
# level_warmups), the model's origin (model_origin), the SLOs and repeats a search held (capacities.slo_*);
# 6: host_accelerators (the GPUs a local run really ran on, as their driver names them);
# 7: a model served from a local folder is named by its id in `model` (accelbench.core.model_origin), the
# folder kept in model_path (runs, capacities); 8: a search's capacity interval (capacities.capacity_low,
# capacity_high, capacity_method) and why it stopped where it did (stopped_why; the outcomes probe_failed,
# saturated, drifted); 9: a fixed campaign's recheck of its first level (runs.recheck) and what it found
# (runs.host_drift), and the quantization the server's log reported (runs.server_quantization); 10: the
# quality table (a quantization matrix's configurations against their reference); 11: the startups table (a
# server's start-up in phases) and the costs table (what each server of a campaign cost); 12: a trace
# workload's identity (runs and capacities: trace_*) and a level's time-scale (runs.time_scale); 13: an A/B
# comparison's variant of a run (runs.comparison, variant, variant_round); 14: the server a run's workload
# shared with the configuration's other workloads (runs.server_group, startups.server_group); 15: the copy of
# a server's weights into its node's cache (startups.weights_fetch_s); 16: the sketches table (each run's
# latency distributions, which the report reads instead of the requests).
# Older files read the newer columns as null; their `model` still holds what the spec named, a path for a
# folder.
SCHEMA_VERSION = 16
PARTITIONS = ("accelerator_type", "date")  # Hive partitions (directories), not columns in the files
# runs.status: "ok" (every request finished), "errors" (a result, some requests failed, the server stayed
# up), "failed" (no usable result, or the server died: the counts of what finished are kept).
# A row of one of these tables as read (`Lake.read(name).to_pylist()`): its columns are the schema's
# below, any of them null in older rows, so readers take each with .get(). The report builds its typed
# model (`accelbench.report.model`) from such rows.
LakeRow = dict[str, Any]
MEASURED_STATUSES = ("ok", "errors")  # a measurement: a report point, "already measured"
IMPORTED_MODE = "imported"  # runs.execution_mode of a result measured elsewhere (lake/imported.py)
METRICS = ("ttft", "tpot", "itl", "e2el")
STATS = ("mean", "median", "std", "p50", "p90", "p95", "p99")

REQUESTS = pa.schema(
    [
        ("schema_version", pa.int16()),
        ("run_id", pa.string()),
        ("campaign_id", pa.string()),
        ("spec_id", pa.string()),
        ("request_index", pa.int32()),
        ("success", pa.bool_()),
        ("error", pa.string()),
        ("input_tokens", pa.int32()),
        ("output_tokens", pa.int32()),
        ("start_offset_s", pa.float64()),  # send time relative to the level's first request
        ("queue_time_s", pa.float64()),  # time the client held the request before sending it
        ("ttft_s", pa.float64()),
        ("e2el_s", pa.float64()),
        ("tpot_s", pa.float64()),  # (e2el - ttft) / (output tokens - 1), vLLM's definition
        ("itl_mean_s", pa.float64()),
        ("itl_p50_s", pa.float64()),
        ("itl_p99_s", pa.float64()),
        ("itl_max_s", pa.float64()),
    ]
)

# A run's latencies of each metric as a distribution (accelbench.core.sketches.Distribution): the report's
# percentiles and their intervals come from here, not from the requests table (issue 50). A run's values
# are kept (values_ms, sorted) while they are no more than its sketch's bins would be; beyond, a DDSketch of
# relative accuracy `relative_accuracy`: bin_counts[i] values fell in the bin of key key_offset + i
# (ddsketch's LogarithmicMapping). p50_ms ... p99_ms: the run's median-unbiased (type 8) quantiles, exact
# (from the values at ingest), which a t interval over repeats reads without the bins.
SKETCHED_METRICS = {"ttft": "ttft_s", "tpot": "tpot_s", "e2el": "e2el_s"}  # metric -> requests column (s)
SKETCH_QUANTILES = (0.5, 0.9, 0.95, 0.99)
SKETCHES = pa.schema(
    [
        ("schema_version", pa.int16()),
        ("run_id", pa.string()),
        ("campaign_id", pa.string()),
        ("spec_id", pa.string()),
        ("metric", pa.string()),  # ttft, tpot or e2el, of the run's successful requests
        ("count", pa.int64()),  # values in the distribution (NaN ones, e.g. TPOT of one token, left out)
        ("zero_count", pa.int64()),
        ("total_ms", pa.float64()),
        ("min_ms", pa.float64()),
        ("max_ms", pa.float64()),
        *[(f"p{round(q * 100)}_ms", pa.float64()) for q in SKETCH_QUANTILES],
        ("values_ms", pa.list_(pa.float64())),  # the values, sorted (null: sketched)
        ("relative_accuracy", pa.float64()),  # the sketch's (null: exact)
        ("key_offset", pa.int32()),
        ("bin_counts", pa.list_(pa.int64())),
    ]
)

# A trace workload's identity (accelbench.core.workloads.TraceIdentity) on every row of its runs and searches:
# the report keeps each trace apart (by its sha256), and says what traffic a figure is of. Null otherwise.
TRACE_COLUMNS = [
    ("trace_name", pa.string()),  # the trace file's stem
    ("trace_uri", pa.string()),  # where the campaign read it
    ("trace_sha256", pa.string()),  # of the file's bytes
    ("trace_requests", pa.int32()),
    ("trace_duration_s", pa.float64()),  # first to last arrival at 1x
    ("trace_mean_rate", pa.float64()),  # arrivals per second at 1x
    ("trace_input_p50", pa.float64()),  # prompt tokens' percentiles
    ("trace_input_p90", pa.float64()),
    ("trace_input_p99", pa.float64()),
    ("trace_output_p50", pa.float64()),  # output tokens' percentiles
    ("trace_output_p90", pa.float64()),
    ("trace_output_p99", pa.float64()),
]

_RUN_AGGREGATES = [
    ("duration_s", pa.float64()),
    ("completed", pa.int32()),
    ("failed", pa.int32()),
    ("total_input_tokens", pa.int64()),
    ("total_output_tokens", pa.int64()),
    ("request_throughput", pa.float64()),
    ("request_goodput", pa.float64()),
    ("output_throughput", pa.float64()),
    ("total_token_throughput", pa.float64()),
    ("max_output_tokens_per_s", pa.float64()),
    ("max_concurrent_requests", pa.int32()),
    ("peak_concurrency", pa.int32()),
] + [(f"{stat}_{metric}_ms", pa.float64()) for metric in METRICS for stat in STATS]

RUNS = pa.schema(
    [
        ("schema_version", pa.int16()),
        ("run_id", pa.string()),
        ("campaign_id", pa.string()),
        ("spec_id", pa.string()),
        ("dag_run_id", pa.string()),
        ("level_kind", pa.string()),
        ("level_value", pa.float64()),
        ("repeat", pa.int16()),
        ("seed", pa.int64()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("wall_s", pa.float64()),
        *_RUN_AGGREGATES,
        ("server_prompt_tokens", pa.float64()),
        ("server_generation_tokens", pa.float64()),
        ("server_preemptions", pa.float64()),
        ("server_request_success", pa.float64()),
        ("server_requests_running_max", pa.float64()),
        ("server_requests_waiting_max", pa.float64()),
        ("server_kv_cache_usage_max", pa.float64()),
        ("server_rss_peak_bytes", pa.float64()),
        ("server_rss_anon_peak_bytes", pa.float64()),
        ("tokens_agree", pa.bool_()),
        ("requested_rate", pa.float64()),
        ("achieved_rate", pa.float64()),
        ("client_limited", pa.bool_()),
        ("client_queue_time_mean_s", pa.float64()),
        # provenance
        ("suite_version", pa.string()),
        ("loadgen_version", pa.string()),
        ("vllm_version", pa.string()),  # as the running server reports it
        ("runtime", pa.string()),
        ("image", pa.string()),
        ("image_digest", pa.string()),
        ("model", pa.string()),  # the model's id, wherever it was served from (model_path: the folder)
        ("model_revision", pa.string()),
        ("served_model_name", pa.string()),
        ("quantization", pa.string()),
        ("dtype", pa.string()),
        ("tensor_parallel_size", pa.int16()),
        ("kv_cache_gib", pa.int32()),
        ("instance_type", pa.string()),
        ("accelerator_count", pa.int16()),
        ("input_len", pa.int32()),
        ("output_len", pa.int32()),
        ("range_ratio", pa.float64()),
        ("dataset", pa.string()),
        ("execution_mode", pa.string()),
        ("pinning", pa.string()),
        ("node", pa.string()),
        ("zone", pa.string()),
        ("capacity_type", pa.string()),
        ("source_uri", pa.string()),  # raw evidence: a campaign's envelope, or the imported file
        ("matrix_key", pa.string()),  # BenchmarkSpec.matrix_key: server + load, whatever the campaign
        # engine settings that make a server configuration (with model, dtype, quantization, TP)
        ("max_model_len", pa.int32()),
        ("kv_cache_dtype", pa.string()),
        ("engine_args", pa.string()),  # the spec's extra engine arguments, space-separated ("" if none)
        # where it ran: the host the server ran on, as the executor saw it
        ("host_cpu_model", pa.string()),
        ("host_architecture", pa.string()),
        ("host_vcpus", pa.int16()),
        ("host_kernel", pa.string()),
        ("host_instance_type", pa.string()),  # EC2's DMI product name, or the node's instance-type label
        ("host_accelerators", pa.string()),  # e.g. "1 x NVIDIA H200 (143771 MiB), driver 570.124.06"
        ("measured_on_instance", pa.bool_()),  # host_instance_type == instance_type: prices apply
        ("server_image_id", pa.string()),  # what ran: the kubelet's imageID, or the local vLLM build
        # why a level failed on the server side, when the server died during it
        ("server_exit_code", pa.int32()),
        ("server_log_tail", pa.string()),
        # a load search's probe (LoadPlan.search): its step (0 first) and phase; null for a fixed level
        ("search_step", pa.int32()),
        ("search_phase", pa.string()),  # "bracket", "bisect" or "recheck"
        ("burstiness", pa.float64()),  # a rate level's arrivals: 1 Poisson, above 1 more regular
        ("workload", pa.string()),  # the profile (accelbench.core.workloads): "fixed", "chat", ...
        ("endpoint", pa.string()),  # "completions" or "chat" (/v1/chat/completions, the chat template)
        ("prefix_len", pa.int32()),  # a shared-prefix workload's prefix tokens; null otherwise
        ("level_warmups", pa.int32()),  # warm-up requests sent before this level, not measured
        ("model_origin", pa.string()),  # where the model came from (its provenance file), when known
        ("model_path", pa.string()),  # the local folder `model` was served from; null: named by its id
        # the first fixed level measured once more at the end to see drift (accelbench.core.drift): not one
        # of its point's repeats
        ("recheck", pa.bool_()),
        # on every row of a run whose host drifted (the recheck, or a search's, disagreed): both figures;
        # the report shows the run's figures undecided
        ("host_drift", pa.string()),
        # what the server's log said it served: "CompressedTensorsW8A8Int8 (CPUInt8ScaledMMLinearKernel)", or
        # "none" (unquantized), in both modes; null where the log could not be read or said neither
        ("server_quantization", pa.string()),
        *TRACE_COLUMNS,
        # a trace workload's level: the trace at this multiple of its recorded pace (2 = twice as fast)
        ("time_scale", pa.float64()),
        # an A/B comparison's run (CampaignRequest.variants): the comparison ("a vs b", its variants in order,
        # the first the baseline), the variant this run's server served and its round of the interleaved
        # servers (0 first); null outside a comparison
        ("ab_comparison", pa.string()),
        ("variant", pa.string()),
        ("variant_round", pa.int16()),
        # the server this run's workload ran on, with its configuration's other workloads in turn (a server
        # group's id, accelbench.core.server_group): the start-up of a group's server is its first workload's
        # `startups` row; null before schema 14 (a server per workload)
        ("server_group", pa.string()),
    ]
)

# One row per load search (core/search_plan.py's SearchResult): the configuration, as its runs rows name it,
# and what the search found. Partitioned like runs; the probes are runs rows with a search_step.
CAPACITIES = pa.schema(
    [
        ("schema_version", pa.int16()),
        ("campaign_id", pa.string()),
        ("spec_id", pa.string()),
        ("dag_run_id", pa.string()),
        ("matrix_key", pa.string()),
        ("instance_type", pa.string()),
        ("accelerator_count", pa.int16()),
        ("model", pa.string()),
        ("vllm_version", pa.string()),  # as the running server reports it
        ("execution_mode", pa.string()),
        ("source_uri", pa.string()),
        ("host_cpu_model", pa.string()),
        ("host_architecture", pa.string()),
        ("host_vcpus", pa.int16()),
        ("host_kernel", pa.string()),
        ("host_instance_type", pa.string()),
        ("host_accelerators", pa.string()),
        ("measured_on_instance", pa.bool_()),  # host_instance_type == instance_type: prices apply
        ("variable", pa.string()),  # "concurrency", "request_rate" or "time_scale" (a trace's headroom)
        ("lower", pa.float64()),  # the bounds searched
        ("upper", pa.float64()),
        ("precision", pa.string()),  # what the bracket was narrowed to: "1 concurrent", "10%"
        # "capacity", "upper_bound" (the upper bound passed), "below_lower", "saturated" (bracketing stopped
        # past the server's throughput), "client_limited", "untrusted", "probe_failed" (a probe's level
        # failed: the bracket before it is kept), "drifted" (the first probe measured again disagreed)
        ("outcome", pa.string()),
        ("capacity", pa.float64()),  # null unless outcome is capacity, upper_bound or saturated
        ("bracket_passing", pa.float64()),  # the largest passing load; null if none passed
        ("bracket_failing", pa.float64()),  # the smallest failing load; null if none failed
        ("limiting_metric", pa.string()),  # the SLO the failing end missed furthest ("p99 TTFT")
        ("stopped_at", pa.float64()),  # where it stopped early: the probe's load (drifted: the first's)
        ("probes", pa.int32()),
        ("server_s", pa.float64()),  # seconds under load over every repeat of every probe
        # what the capacity holds: every repeat of a passing probe within these (null: no limit)
        ("slo_ttft_p99_ms", pa.float64()),
        ("slo_tpot_p99_ms", pa.float64()),
        ("slo_e2el_p99_ms", pa.float64()),
        ("slo_max_error_rate", pa.float64()),
        ("repeats", pa.int16()),  # repeats per probe
        ("min_requests", pa.int32()),  # requests a repeat needed for its p99 to count
        ("model_origin", pa.string()),
        ("model_path", pa.string()),
        ("stopped_why", pa.string()),  # why the search stopped at stopped_at (null: it did not stop early)
        ("capacity_low", pa.float64()),  # the capacity's interval (null: none, or written before schema 8)
        ("capacity_high", pa.float64()),
        ("capacity_method", pa.string()),  # how the interval was found, as the report says it
        *TRACE_COLUMNS,  # a headroom search's trace (variable time_scale)
    ]
)

# One row per configuration of a quantization matrix (a spec with a quality plan): its quality against the
# reference configuration of the same campaign, instance type and workload (accelbench.lake.quality).
# Partitioned like runs. The reference's own row compares it with itself (its prompts in reverse order):
# the noise floor, ~0.
QUALITY = pa.schema(
    [
        ("schema_version", pa.int16()),
        ("campaign_id", pa.string()),
        ("spec_id", pa.string()),
        ("dag_run_id", pa.string()),
        ("matrix_key", pa.string()),
        ("instance_type", pa.string()),
        ("workload", pa.string()),
        ("model", pa.string()),  # the configuration's checkpoint, by its id
        ("reference_model", pa.string()),  # the reference's (the bf16 checkpoint)
        ("is_reference", pa.bool_()),
        ("quantization", pa.string()),  # as planned (the checkpoint's config)
        ("server_quantization", pa.string()),  # as the server's log said it served
        ("vllm_version", pa.string()),
        ("execution_mode", pa.string()),
        ("host_cpu_model", pa.string()),
        ("source", pa.string()),  # "measured" here, or "imported" (lm-eval results JSON)
        # next-token distributions against the reference's: top-k KL (nats) and top-1 agreement, 95% intervals
        ("top_k", pa.int16()),
        ("prompts", pa.int32()),
        ("positions", pa.int32()),
        ("kl_mean", pa.float64()),
        ("kl_mean_low", pa.float64()),
        ("kl_mean_high", pa.float64()),
        ("kl_p99", pa.float64()),
        ("kl_p99_low", pa.float64()),
        ("kl_p99_high", pa.float64()),
        ("top1_agreement", pa.float64()),
        ("top1_low", pa.float64()),
        ("top1_high", pa.float64()),
        ("shared_mass", pa.float64()),  # the reference's mass on tokens both top-k lists hold
        ("fidelity_method", pa.string()),
        (
            "noise_kl_mean",
            pa.float64(),
        ),  # this configuration against itself: the floor kl_mean is read against
        # accuracy on a task through lm-eval, the reference's on the same questions, and their ratio
        ("task", pa.string()),
        ("questions", pa.int32()),
        ("accuracy", pa.float64()),
        ("accuracy_low", pa.float64()),
        ("accuracy_high", pa.float64()),
        ("accuracy_method", pa.string()),
        ("reference_accuracy", pa.float64()),
        ("reference_accuracy_low", pa.float64()),
        ("reference_accuracy_high", pa.float64()),
        ("accuracy_ratio", pa.float64()),
        ("accuracy_ratio_low", pa.float64()),
        ("accuracy_ratio_high", pa.float64()),
        ("accuracy_ratio_method", pa.string()),
        ("lm_eval_version", pa.string()),
        ("error", pa.string()),  # why a figure is missing (a step that failed, a reference not measured)
    ]
)

# One row per server that became ready (accelbench.core.startup_phases): its start-up in phases, each ending
# where the next begins (null: a boundary not seen, its time in the next), vLLM's own durations beside them,
# and how long the first level waited after ready. Partitioned like runs.
STARTUPS = pa.schema(
    [
        ("schema_version", pa.int16()),
        ("campaign_id", pa.string()),
        ("spec_id", pa.string()),
        ("dag_run_id", pa.string()),
        ("matrix_key", pa.string()),
        ("instance_type", pa.string()),
        ("accelerator_count", pa.int16()),
        ("model", pa.string()),
        ("quantization", pa.string()),
        ("vllm_version", pa.string()),
        ("execution_mode", pa.string()),
        ("node", pa.string()),
        ("capacity_type", pa.string()),
        ("nodeclaim", pa.string()),  # kubernetes: the Karpenter NodeClaim that owns the node
        ("host_cpu_model", pa.string()),
        ("host_instance_type", pa.string()),
        ("source_uri", pa.string()),
        ("started_at", pa.timestamp("us", tz="UTC")),  # the first instant (local: the process launched)
        ("ready_s", pa.float64()),  # the first instant -> ready: the phases' sum
        *((name, pa.float64()) for name in PHASES),
        *((name, pa.float64()) for name in FIGURES),
        ("first_level_s", pa.float64()),  # ready -> the load generator started (its warm-up first)
        ("method", pa.string()),  # how the boundaries were found
        ("ended_at", pa.timestamp("us", tz="UTC")),  # the server stopped (local) or its pod was deleted
        # what its node was paid for: from the node's launch for it (or the pod's scheduling on a node that
        # was there; local: the process's launch) to ended_at
        ("billed_s", pa.float64()),
        ("server_group", pa.string()),  # the server's group: every workload it ran (runs.server_group)
    ]
)

# One row per server of a campaign (accelbench.lake.costs, written by its summary): what its node was paid
# for (startups.billed_s) at the price in force on its start for its capacity type. Partitioned like runs.
COSTS = pa.schema(
    [
        ("schema_version", pa.int16()),
        ("campaign_id", pa.string()),
        ("spec_id", pa.string()),
        ("dag_run_id", pa.string()),
        ("matrix_key", pa.string()),
        ("instance_type", pa.string()),
        ("model", pa.string()),
        ("vllm_version", pa.string()),
        ("execution_mode", pa.string()),
        ("capacity_type", pa.string()),  # the node's karpenter.sh/capacity-type
        ("pricing_model", pa.string()),  # on_demand or spot: the price applied (null: unpriced)
        ("region", pa.string()),
        ("billed_s", pa.float64()),
        ("usd_per_hour", pa.float64()),
        ("price_source", pa.string()),  # where the price came from, and the date it took effect
        ("usd", pa.float64()),  # billed_s x usd_per_hour
        ("unpriced", pa.string()),  # why usd is null
    ]
)

TABLES = {
    "requests": REQUESTS,
    "sketches": SKETCHES,
    "runs": RUNS,
    "capacities": CAPACITIES,
    "quality": QUALITY,
    "startups": STARTUPS,
    "costs": COSTS,
}


# The lake's prefixes besides its tables': the benchmark pods' raw evidence, the workers' copies of imported
# files, the reports, the stored timed traces (what a benchmark pod reads), and the models whose weights the
# servers stream (ACCELBENCH_WEIGHTS_URI, accelbench.campaign.weights). The IAM policies of
# infra/terraform/iam.tf grant these and the tables' prefixes (tests/unit/test_infra_terraform.py).
AREAS = ("raw", "imports", "reports", "traces", "models")


def reference_markdown() -> str:
    """The column tables of docs/reference/lake-schema.md (scripts/gen_reference.py writes them there)."""
    parts = [
        f"Schema version {SCHEMA_VERSION}. Partitions (directories, not columns in the files): "
        + ", ".join(f"`{p}`" for p in PARTITIONS)
        + "."
    ]
    for name, schema in TABLES.items():
        parts += ["", f"`{name}` ({len(schema)} columns):", "", "| column | type |", "|---|---|"]
        parts += [f"| `{column.name}` | `{column.type}` |" for column in schema]
    return "\n".join(parts) + "\n"
