"""Raw loadgen output (envelope + `vllm bench serve` JSON) -> `runs` and `requests` rows (and a load
search's `capacities` row) -> the lake."""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import ValidationError

from accelbench import __version__
from accelbench.core.evidence import Envelope, LevelRecord
from accelbench.core.model_origin import is_local_path, model_identity
from accelbench.core.spec import LoadPlan, ServerSpec
from accelbench.errors import AccelbenchError
from accelbench.lake.raw import ENVELOPE, EXECUTION, RawEvidenceError, RawLocation, Reader
from accelbench.lake.rows import capacities_table, runs_table
from accelbench.lake.schemas import (
    CAPACITIES,
    METRICS,
    REQUESTS,
    SCHEMA_VERSION,
    SKETCHES,
    STATS,
    TRACE_COLUMNS,
)
from accelbench.lake.sketches import sketch_table
from accelbench.lake.startups import read_startup, startups
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
    # The host the server ran on (execution.json; kubernetes mode adds the node's label and the image).
    host_cpu_model: str | None = None
    host_architecture: str | None = None
    host_vcpus: int | None = None
    host_kernel: str | None = None
    host_instance_type: str | None = None
    host_accelerators: str | None = None  # the NVIDIA GPUs nvidia-smi lists (local mode on a GPU host)
    server_image_id: str | None = None
    # What the server's own log said it served (accelbench.core.server_log): scheme and kernel, or "none".
    server_quantization: str | None = None
    server_group: str | None = None  # the server's group (its workloads run in turn: core.server_group)


PROVENANCE_FIELDS = tuple(f.name for f in fields(Provenance) if f.name != "dag_run_id")
# Hints that belong to the "failed" level only: how the server died (kubernetes mode, where only the
# orchestrator sees the server container's exit and log). What the driver recorded itself wins.
SERVER_DEATH_FIELDS = ("server_exit_code", "server_log_tail")
THROUGHPUTS = (
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
)
# The `runs` columns a level's bench result gives (result_columns): null when a level has none.
RESULT_COLUMNS = (
    "duration_s",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "max_concurrent_requests",
    "client_queue_time_mean_s",
    *THROUGHPUTS,
    *(f"{stat}_{metric}_ms" for metric in METRICS for stat in STATS),
)


def request_table(result: dict[str, Any], run_id: str, campaign_id: str, spec_id: str) -> pa.Table:
    """The `requests` rows of one `vllm bench serve --save-detailed` result, built column by column.

    Columnar (NumPy over the flat inter-token latencies) because a level can hold 10^5 requests: this is
    the ingest's hot path (benchmarks/ingest_scaling.py). ITL percentiles use the nearest rank
    round(q * (n - 1)) of each request's sorted gaps, half to even.
    """
    ttft = np.asarray(result["ttfts"], dtype=np.float64)
    n = len(ttft)
    columns = {k: result[k] for k in ("latencies", "itls", "input_lens", "output_lens")}
    for key, values in columns.items():
        if len(values) != n:
            raise ValueError(f"{key} has {len(values)} entries, ttfts {n}")
    e2el = np.asarray(columns["latencies"], dtype=np.float64)
    n_in = np.asarray(columns["input_lens"], dtype=np.int64)
    n_out = np.asarray(columns["output_lens"], dtype=np.int64)
    errors = list(result.get("errors") or [])[:n]
    errors += [""] * (n - len(errors))
    failed = np.fromiter((bool(e) for e in errors), dtype=bool, count=n)
    starts = result.get("start_times") or []
    if starts and len(starts) != n:
        raise ValueError(f"start_times has {len(starts)} entries, ttfts {n}")
    start_arr = np.asarray(starts, dtype=np.float64)
    queue = list(result.get("queue_times") or [])[:n]
    itls = columns["itls"]
    lengths = np.fromiter(map(len, itls), dtype=np.int64, count=n)
    flat = np.fromiter(itertools.chain.from_iterable(itls), dtype=np.float64, count=int(lengths.sum()))
    has = lengths > 0
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])) if n else np.zeros(0, dtype=np.int64)
    itl_mean, itl_max, itl_p50, itl_p99 = (np.full(n, np.nan) for _ in range(4))
    if flat.size:
        starts_of = offsets[has]
        itl_mean[has] = np.add.reduceat(flat, starts_of) / lengths[has]
        itl_max[has] = np.maximum.reduceat(flat, starts_of)
        ordered = flat[np.lexsort((flat, np.repeat(np.arange(n), lengths)))]
        for out, q in ((itl_p50, 0.5), (itl_p99, 0.99)):
            out[has] = ordered[starts_of + np.rint(q * (lengths[has] - 1)).astype(np.int64)]
    many = (n_out > 1) & ~failed
    tpot = np.full(n, np.nan)
    tpot[many] = (e2el[many] - ttft[many]) / (n_out[many] - 1)

    def floats(values: np.ndarray) -> pa.Array:
        return pa.array(values, type=pa.float64(), mask=np.isnan(values))

    data = {
        "schema_version": pa.array(np.full(n, SCHEMA_VERSION, dtype=np.int16)),
        "run_id": pa.array([run_id] * n, type=pa.string()),
        "campaign_id": pa.array([campaign_id] * n, type=pa.string()),
        "spec_id": pa.array([spec_id] * n, type=pa.string()),
        "request_index": pa.array(np.arange(n, dtype=np.int32)),
        "success": pa.array(~failed),
        "error": pa.array([e or None for e in errors], type=pa.string()),
        "input_tokens": pa.array(n_in.astype(np.int32)),
        "output_tokens": pa.array(n_out.astype(np.int32)),
        "start_offset_s": pa.array(start_arr - start_arr.min()) if starts else pa.nulls(n, pa.float64()),
        "queue_time_s": pa.array(queue + [None] * (n - len(queue)), type=pa.float64()),
        "ttft_s": pa.array(ttft),
        "e2el_s": pa.array(e2el),
        "tpot_s": floats(tpot),
        "itl_mean_s": floats(itl_mean),
        "itl_p50_s": floats(itl_p50),
        "itl_p99_s": floats(itl_p99),
        "itl_max_s": floats(itl_max),
    }
    return pa.Table.from_pydict(data, schema=REQUESTS)


def _host_columns(prov: Provenance, server: ServerSpec) -> dict[str, Any]:
    """Where a run or a search ran: the host facts, and whether that host is the planned instance type
    (prices apply only to a measurement of the instance type itself, never to a stand-in host)."""
    return {
        "host_cpu_model": prov.host_cpu_model,
        "host_architecture": prov.host_architecture,
        "host_vcpus": prov.host_vcpus,
        "host_kernel": prov.host_kernel,
        "host_instance_type": prov.host_instance_type,
        "host_accelerators": prov.host_accelerators,
        "measured_on_instance": prov.host_instance_type == server.instance_type,
    }


def run_row(
    envelope: Envelope,
    level: LevelRecord,
    result: dict[str, Any] | None,
    prov: Provenance,
    models: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """One level's `runs` row: every column of the schema (runs_table checks it), null where unknown.
    `models`: the spec's model_columns, when the caller resolved them once for every level."""
    spec, server, load = envelope.spec, envelope.spec.server, envelope.spec.load
    counters, gauges, memory = level.server_counters, level.server_gauge_peaks, level.memory_peaks
    version = envelope.server.get("version")
    row: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": level.run_id,
        "campaign_id": spec.campaign_id,
        "spec_id": envelope.spec_id,
        "dag_run_id": prov.dag_run_id,
        "level_kind": level.level_kind,
        "level_value": level.level_value,
        "repeat": level.repeat,
        "seed": level.seed,
        "status": level.status,
        "error": level.error,
        "started_at": datetime.fromisoformat(level.started_at),
        "wall_s": level.wall_s,
        "server_prompt_tokens": counters.get("prompt_tokens"),
        "server_generation_tokens": counters.get("generation_tokens"),
        "server_preemptions": counters.get("preemptions"),
        "server_request_success": counters.get("request_success"),
        "server_requests_running_max": gauges.get("requests_running"),
        "server_requests_waiting_max": gauges.get("requests_waiting"),
        "server_kv_cache_usage_max": gauges.get("kv_cache_usage"),
        "server_rss_peak_bytes": memory.get("server_rss_bytes"),
        "server_rss_anon_peak_bytes": memory.get("server_rss_anon_bytes"),
        "tokens_agree": level.tokens_agree,
        "requested_rate": level.requested_rate,
        "achieved_rate": level.achieved_rate,
        "client_limited": level.client_limited,
        "peak_concurrency": level.peak_concurrency,
        "suite_version": __version__,
        "loadgen_version": envelope.loadgen_version,
        "vllm_version": version.get("version") if isinstance(version, dict) else None,
        "runtime": server.runtime,
        "image": server.image,
        "image_digest": server.image_digest,
        **(models if models is not None else model_columns(server)),
        "model_origin": _model_origin(envelope),
        "model_revision": server.model_revision,
        "served_model_name": server.served_model_name,
        "quantization": server.quantization,
        "dtype": server.dtype,
        "tensor_parallel_size": server.tensor_parallel_size,
        "kv_cache_gib": server.kv_cache_gib,
        "instance_type": server.instance_type,
        "accelerator_count": server.accelerator_count,
        "input_len": load.input_len,
        "output_len": load.output_len,
        "range_ratio": load.range_ratio,
        "dataset": load.runs.dataset,
        "execution_mode": prov.execution_mode,
        "pinning": prov.pinning,
        "node": prov.node,
        "zone": prov.zone,
        "capacity_type": prov.capacity_type,
        "source_uri": prov.source_uri,
        "matrix_key": spec.matrix_key,
        "max_model_len": server.max_model_len,
        "kv_cache_dtype": server.kv_cache_dtype,
        "engine_args": " ".join(server.extra_engine_args),
        **_host_columns(prov, server),
        "server_image_id": prov.server_image_id,
        "server_quantization": prov.server_quantization,
        "server_exit_code": level.server_exit_code,
        "server_log_tail": level.server_log_tail,
        "search_step": level.search_step,
        "search_phase": level.search_phase,
        "burstiness": load.burstiness if level.level_kind == "rate" else None,
        "workload": load.runs.name,
        "endpoint": load.runs.endpoint,
        "prefix_len": load.runs.prefix_len or None,
        "level_warmups": load.level_warmup_count(
            int(level.level_value) if level.level_kind == "concurrency" else None
        ),
        "recheck": level.recheck,
        "host_drift": envelope.drift,
        **trace_columns(load),
        "time_scale": level.level_value if level.level_kind == "scale" else None,
        "ab_comparison": spec.variant.comparison if spec.variant else None,
        "variant": spec.variant.name if spec.variant else None,
        "variant_round": spec.variant.round if spec.variant else None,
        "server_group": prov.server_group,
    }
    return row | (result_columns(result) if result is not None else dict.fromkeys(RESULT_COLUMNS))


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
    for key in THROUGHPUTS:
        row[key] = result.get(key)
    for metric in METRICS:
        for stat in STATS:
            row[f"{stat}_{metric}_ms"] = result.get(f"{stat}_{metric}_ms")
    return row


def model_columns(server: ServerSpec) -> dict[str, str | None]:
    """`model`, the model's id, and `model_path`, the local folder it was served from (None for a model
    named by its id): the spec's `model_id` as the planner resolved it, or for a spec without one (planned
    before the field existed, or built by hand) resolved here from the folder (the ingest of a local run
    runs where the model is; a folder gone since keeps its path as the id, with a warning)."""
    if server.model_id is None:
        identity = model_identity(server.model)
        return {"model": identity.model_id, "model_path": identity.path}
    named_by_id = server.model == server.model_id and not is_local_path(server.model)
    return {"model": server.model_id, "model_path": None if named_by_id else server.model}


def _model_origin(envelope: Envelope) -> str | None:
    """Where the model came from, as the load generator read it beside the server (None: not recorded)."""
    origin = envelope.server.get("model_origin")
    return origin if isinstance(origin, str) else None


def trace_columns(load: LoadPlan) -> dict[str, Any]:
    """A trace workload's identity as the lake's `trace_*` columns (null for any other workload)."""
    trace = load.workload.trace if load.workload is not None else None
    names = [name for name, _ in TRACE_COLUMNS]
    if trace is None:
        return dict.fromkeys(names)
    return {name: getattr(trace, name.removeprefix("trace_")) for name in names}


def capacity_row(envelope: Envelope, prov: Provenance) -> dict[str, Any] | None:
    """The `capacities` row of a load search's envelope (None without a search result): the
    configuration as its probes' `runs` rows name it, and the capacity, bracket and cost found."""
    result = envelope.search
    if result is None:
        return None
    spec, server, plan = envelope.spec, envelope.spec.server, result.plan
    version = envelope.server.get("version")
    precision = f"{plan.step:g} {plan.unit}" if plan.step is not None else f"{(plan.relative or 0) * 100:g}%"
    return {
        "schema_version": SCHEMA_VERSION,
        "campaign_id": spec.campaign_id,
        "spec_id": envelope.spec_id,
        "dag_run_id": prov.dag_run_id,
        "matrix_key": spec.matrix_key,
        "instance_type": server.instance_type,
        "accelerator_count": server.accelerator_count,
        **model_columns(server),
        "model_origin": _model_origin(envelope),
        "vllm_version": version.get("version") if isinstance(version, dict) else None,
        "execution_mode": prov.execution_mode,
        "source_uri": prov.source_uri,
        **_host_columns(prov, server),
        "variable": plan.variable,
        "lower": plan.lower,
        "upper": plan.upper,
        "precision": precision,
        "outcome": result.outcome,
        "capacity": result.capacity,
        "bracket_passing": result.passing,
        "bracket_failing": result.failing,
        "limiting_metric": result.limiting,
        "stopped_at": result.stopped_at,
        "stopped_why": result.stopped_why,
        "capacity_low": result.capacity_low,
        "capacity_high": result.capacity_high,
        "capacity_method": result.capacity_method,
        **trace_columns(spec.load),
        "probes": result.probes_used,
        "server_s": result.server_s,
        "slo_ttft_p99_ms": plan.slos.ttft_p99_ms,
        "slo_tpot_p99_ms": plan.slos.tpot_p99_ms,
        "slo_e2el_p99_ms": plan.slos.e2el_p99_ms,
        "slo_max_error_rate": plan.slos.max_error_rate,
        "repeats": plan.repeats,
        "min_requests": plan.min_requests,
    }


def capacities(envelope: Envelope, prov: Provenance) -> pa.Table:
    """The envelope's `capacities` table: one row for a load search, none otherwise."""
    row = capacity_row(envelope, prov)
    return capacities_table([row]) if row is not None else CAPACITIES.empty_table()


@dataclass
class Ingested:
    runs: pa.Table
    requests: pa.Table
    capacities: pa.Table
    sketches: pa.Table  # the runs' latency distributions (lake/sketches.py)


@dataclass
class Landed:
    """What ingest_raw wrote: the runs rows, how many request rows went beside them, and the capacity
    row of a load search (an empty table otherwise)."""

    runs: pa.Table
    request_rows: int
    capacities: pa.Table


def level_rows(
    envelope: Envelope, read: Reader, prov: Provenance, server_death: dict[str, Any] | None = None
) -> Iterator[tuple[dict[str, Any], pa.Table | None]]:
    """Each level's `runs` row and `requests` table, one level at a time: only one raw result file is
    held in memory (a level can hold 10^5 requests). `server_death` fills the failed level's gaps."""
    models = model_columns(envelope.spec.server)  # the model's folder read once, not per level
    for level in envelope.levels:
        if server_death and level.status == "failed":
            gaps = {k: v for k, v in server_death.items() if getattr(level, k) is None}
            level = dataclasses.replace(level, **gaps)
        result = read(level.result_file) if level.result_file else None
        table = (
            request_table(result, level.run_id, envelope.spec.campaign_id, envelope.spec_id)
            if result is not None
            else None
        )
        row = run_row(envelope, level, result, prov, models)
        del result
        yield row, table


def ingest(envelope: Envelope | Mapping[str, Any], read: Reader, prov: Provenance) -> Ingested:
    """Rows from an envelope; `read(name)` returns a raw result file's JSON, or None when it is absent."""
    doc = Envelope.model_validate(envelope)
    runs, requests = [], [REQUESTS.empty_table()]
    for row, table in level_rows(doc, read, prov):
        runs.append(row)
        if table is not None:
            requests.append(table)
    table = pa.concat_tables(requests)
    return Ingested(runs_table(runs), table, capacities(doc, prov), sketch_table(table))


class StaleEvidence(AccelbenchError):
    """The raw folder holds another attempt's evidence (an earlier run of a cleared task)."""


def ingest_raw(
    lake: Lake, where: RawLocation, dag_run_id: str, attempt: str | None = None, **hints: Any
) -> Landed | None:
    """Rows from the lake's raw area (any execution mode) into `runs`/`requests` (and `capacities` for a
    load search); None if no envelope.

    With `attempt`, only an envelope of that attempt is accepted (StaleEvidence otherwise): the raw
    folder of a spec is the same for every attempt, and an attempt whose server never started leaves
    the previous one's files in place. `hints` are provenance facts only the orchestrator knows
    (zone, capacity type of the node), and how the server container died (SERVER_DEATH_FIELDS, for the
    failed level's row only); they override what the executor recorded (the node's instance-type
    label is what the scheduler placed the pod by; the DMI reading is the fallback), except that the
    server death hints never replace a cause the driver recorded itself.
    """
    read = where.reader(lake)
    doc = read(ENVELOPE)
    if doc is None:
        return None
    if attempt is not None and doc.get("attempt") != attempt:
        raise StaleEvidence(
            f"{lake.uri_of(lake.path(*where.parts, ENVELOPE))} is from attempt {doc.get('attempt')}, "
            f"not {attempt}: this attempt left no complete evidence"
        )
    missing = [k for k in ("spec", "spec_id", "levels", "loadgen_version") if k not in doc]
    if missing:
        raise RawEvidenceError(f"{lake.uri_of(lake.path(*where.parts, ENVELOPE))} lacks {', '.join(missing)}")
    try:
        envelope = Envelope.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise RawEvidenceError(
            f"{lake.uri_of(lake.path(*where.parts, ENVELOPE))} is not a load generator envelope: {problems}"
        ) from None
    execution = read(EXECUTION) or {}
    facts = {k: execution[k] for k in PROVENANCE_FIELDS if execution.get(k) is not None}
    facts |= {k: v for k, v in hints.items() if k in PROVENANCE_FIELDS and v is not None}
    facts["source_uri"] = lake.uri_of(lake.path(*where.parts, ENVELOPE))
    prov = Provenance(dag_run_id=dag_run_id, **({"execution_mode": "unknown"} | facts))
    death = {k: hints[k] for k in SERVER_DEATH_FIELDS if hints.get(k) is not None}
    # requests first: reports read runs, so a run becomes visible only once its requests are in place,
    # and a write that fails for good leaves no run behind (a retry rewrites both files). The requests
    # stream level by level into their file, so memory holds one level, not the spec.
    # Each level's latency distributions are taken from its requests on the way (the report reads those).
    runs, sketches = [], [SKETCHES.empty_table()]
    with lake.table_writer("requests", where.accelerator_type, where.date, where.stem) as sink:
        for row, table in level_rows(envelope, read, prov, death):
            runs.append(row)
            if table is not None:
                sink.write(table)
                sketches.append(sketch_table(table))
    landed = Landed(runs_table(runs), sink.rows, capacities(envelope, prov))
    _replace(lake, "sketches", pa.concat_tables(sketches), where)
    # The start-up before the runs, like the requests: a run visible in a report has its start-up in place.
    startup = read_startup(read, lake.uri_of(lake.path(*where.parts)))
    model = model_columns(envelope.spec.server)
    _replace(lake, "startups", startups(envelope, startup, dataclasses.asdict(prov), model), where)
    lake.write_table("runs", landed.runs, where.accelerator_type, where.date, where.stem)
    # The capacity after its probes. An attempt without a search result (a failed probe cut it short)
    # leaves no capacity of an earlier attempt behind.
    _replace(lake, "capacities", landed.capacities, where)
    return landed


def _replace(lake: Lake, table: str, rows: pa.Table, where: RawLocation) -> None:
    """The spec's file of `table` holds `rows`; none (not an earlier attempt's) when there are none."""
    if rows.num_rows:
        lake.write_table(table, rows, where.accelerator_type, where.date, where.stem)
        return
    stale = lake.table_path(table, where.accelerator_type, where.date, where.stem)
    if lake.fs.exists(stale):
        lake.fs.rm_file(stale)
