"""Raw loadgen output (envelope + `vllm bench serve` JSON) -> `runs` and `requests` rows -> the lake."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import pyarrow as pa

from accelbench import __version__
from accelbench.campaign.spec import BenchmarkSpec
from accelbench.errors import AccelbenchError
from accelbench.lake.raw import ENVELOPE, EXECUTION, RawEvidenceError, RawLocation, Reader
from accelbench.lake.schemas import METRICS, REQUESTS, RUNS, SCHEMA_VERSION, STATS
from accelbench.lake.store import Lake


@dataclass(frozen=True)
class Provenance:
    """What the envelope cannot know: where and by whom the spec ran."""

    dag_run_id: str
    execution_mode: str
    pinning: str | None = None
    node: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    source_uri: str | None = None  # the raw evidence the rows were made from


PROVENANCE_FIELDS = tuple(f.name for f in fields(Provenance) if f.name != "dag_run_id")


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def request_rows(result: dict[str, Any], run_id: str, campaign_id: str, spec_id: str) -> list[dict[str, Any]]:
    starts = result.get("start_times") or []
    first = min(starts) if starts else None
    queue = result.get("queue_times") or []
    rows = []
    for i, (ttft, e2el, itls, n_in, n_out) in enumerate(
        zip(
            result["ttfts"],
            result["latencies"],
            result["itls"],
            result["input_lens"],
            result["output_lens"],
            strict=True,
        )
    ):
        error = result["errors"][i] if i < len(result.get("errors", [])) else ""
        rows.append(
            {
                "schema_version": SCHEMA_VERSION,
                "run_id": run_id,
                "campaign_id": campaign_id,
                "spec_id": spec_id,
                "request_index": i,
                "success": not error,
                "error": error or None,
                "input_tokens": n_in,
                "output_tokens": n_out,
                "start_offset_s": starts[i] - first if first is not None else None,
                "queue_time_s": queue[i] if i < len(queue) else None,
                "ttft_s": ttft,
                "e2el_s": e2el,
                "tpot_s": (e2el - ttft) / (n_out - 1) if n_out > 1 and not error else None,
                "itl_mean_s": statistics.fmean(itls) if itls else None,
                "itl_p50_s": _quantile(itls, 0.5),
                "itl_p99_s": _quantile(itls, 0.99),
                "itl_max_s": max(itls) if itls else None,
            }
        )
    return rows


def run_row(
    envelope: dict[str, Any], level: dict[str, Any], result: dict[str, Any] | None, prov: Provenance
) -> dict[str, Any]:
    spec, server = envelope["spec"], envelope["spec"]["server"]
    load = envelope["spec"]["load"]
    counters, gauges, memory = level["server_counters"], level["server_gauge_peaks"], level["memory_peaks"]
    version = envelope.get("server", {}).get("version")
    row: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": level["run_id"],
        "campaign_id": spec["campaign_id"],
        "spec_id": envelope["spec_id"],
        "dag_run_id": prov.dag_run_id,
        "level_kind": level["level_kind"],
        "level_value": level["level_value"],
        "repeat": level["repeat"],
        "seed": level["seed"],
        "status": level["status"],
        "error": level["error"],
        "started_at": datetime.fromisoformat(level["started_at"]),
        "wall_s": level["wall_s"],
        "server_prompt_tokens": counters.get("prompt_tokens"),
        "server_generation_tokens": counters.get("generation_tokens"),
        "server_preemptions": counters.get("preemptions"),
        "server_request_success": counters.get("request_success"),
        "server_requests_running_max": gauges.get("requests_running"),
        "server_requests_waiting_max": gauges.get("requests_waiting"),
        "server_kv_cache_usage_max": gauges.get("kv_cache_usage"),
        "server_rss_peak_bytes": memory.get("server_rss_bytes"),
        "server_rss_anon_peak_bytes": memory.get("server_rss_anon_bytes"),
        "tokens_agree": level["tokens_agree"],
        "requested_rate": level["requested_rate"],
        "achieved_rate": level["achieved_rate"],
        "client_limited": level["client_limited"],
        "peak_concurrency": level.get("peak_concurrency"),
        "suite_version": __version__,
        "loadgen_version": envelope["loadgen_version"],
        "vllm_version": version.get("version") if isinstance(version, dict) else None,
        "runtime": server["runtime"],
        "image": server["image"],
        "image_digest": server["image_digest"],
        "model": server["model"],
        "model_revision": server["model_revision"],
        "served_model_name": server["served_model_name"],
        "quantization": server["quantization"],
        "dtype": server["dtype"],
        "tensor_parallel_size": server["tensor_parallel_size"],
        "kv_cache_gib": server["kv_cache_gib"],
        "instance_type": server["instance_type"],
        "accelerator_count": server["accelerator_count"],
        "input_len": load["input_len"],
        "output_len": load["output_len"],
        "range_ratio": load["range_ratio"],
        "dataset": "random",
        "execution_mode": prov.execution_mode,
        "pinning": prov.pinning,
        "node": prov.node,
        "zone": prov.zone,
        "capacity_type": prov.capacity_type,
        "source_uri": prov.source_uri,
        "matrix_key": BenchmarkSpec.model_validate(spec).matrix_key,
    }
    if result is not None:
        row |= result_columns(result)
    return row


def result_columns(result: dict[str, Any]) -> dict[str, Any]:
    """The `runs` columns that one `vllm bench serve` result JSON gives (aggregates, percentiles)."""
    row: dict[str, Any] = {
        "duration_s": result["duration"],
        "completed": result["completed"],
        "failed": result["failed"],
        "total_input_tokens": result["total_input_tokens"],
        "total_output_tokens": result["total_output_tokens"],
        "max_concurrent_requests": result.get("max_concurrent_requests"),
        "client_queue_time_mean_s": statistics.fmean(result["queue_times"])
        if result.get("queue_times")
        else None,
    }
    for key in (
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
    ):
        row[key] = result.get(key)
    for metric in METRICS:
        for stat in STATS:
            row[f"{stat}_{metric}_ms"] = result.get(f"{stat}_{metric}_ms")
    return row


@dataclass
class Ingested:
    runs: pa.Table
    requests: pa.Table


def ingest(envelope: dict[str, Any], read: Reader, prov: Provenance) -> Ingested:
    """Rows from an envelope; `read(name)` returns a raw result file's JSON, or None when it is absent."""
    runs, requests = [], []
    for level in envelope["levels"]:
        result = read(level["result_file"]) if level.get("result_file") else None
        if result is not None:
            requests += request_rows(
                result, level["run_id"], envelope["spec"]["campaign_id"], envelope["spec_id"]
            )
        runs.append(run_row(envelope, level, result, prov))
    return Ingested(pa.Table.from_pylist(runs, schema=RUNS), pa.Table.from_pylist(requests, schema=REQUESTS))


class StaleEvidence(AccelbenchError):
    """The raw folder holds another attempt's evidence (an earlier run of a cleared task)."""


def ingest_raw(
    lake: Lake, where: RawLocation, dag_run_id: str, attempt: str | None = None, **hints: Any
) -> Ingested | None:
    """Rows from the lake's raw area (any execution mode) into `runs`/`requests`; None if no envelope.

    With `attempt`, only an envelope of that attempt is accepted (StaleEvidence otherwise): the raw
    folder of a spec is the same for every attempt, and an attempt whose server never started leaves
    the previous one's files in place. `hints` are provenance facts only the orchestrator knows
    (zone, capacity type of the node); they fill what the executor did not record.
    """
    read = where.reader(lake)
    envelope = read(ENVELOPE)
    if envelope is None:
        return None
    if attempt is not None and envelope.get("attempt") != attempt:
        raise StaleEvidence(
            f"{lake.uri_of(lake.path(*where.parts, ENVELOPE))} is from attempt {envelope.get('attempt')}, "
            f"not {attempt}: this attempt left no complete evidence"
        )
    missing = [k for k in ("spec", "spec_id", "levels", "loadgen_version") if k not in envelope]
    if missing:
        raise RawEvidenceError(f"{lake.uri_of(lake.path(*where.parts, ENVELOPE))} lacks {', '.join(missing)}")
    execution = read(EXECUTION) or {}
    facts = {k: execution[k] for k in PROVENANCE_FIELDS if execution.get(k) is not None}
    facts |= {k: v for k, v in hints.items() if k in PROVENANCE_FIELDS and v is not None}
    facts["source_uri"] = lake.uri_of(lake.path(*where.parts, ENVELOPE))
    prov = Provenance(dag_run_id=dag_run_id, **({"execution_mode": "unknown"} | facts))
    data = ingest(envelope, read, prov)
    # requests first: reports read runs, so a run becomes visible only once its requests are in place,
    # and a write that fails for good leaves no run behind (a retry rewrites both files).
    lake.write_table("requests", data.requests, where.accelerator_type, where.date, where.stem)
    lake.write_table("runs", data.runs, where.accelerator_type, where.date, where.stem)
    return data
