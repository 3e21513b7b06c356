"""What makes two runs the same point, the same configuration, the same comparison: the keys, the value
a run gives each field of them, and the short ids made from them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from accelbench.core.workloads import DEFAULT_WORKLOAD
from accelbench.lake.schemas import IMPORTED_MODE, LakeRow
from accelbench.report.hosts import host_label

# What the requests looked like (the profile, its endpoint, shared prefix, dataset and lengths): points are
# compared, across tiers or not, only with points of the same model on the same workload (COMPARISON_KEY).
# A trace workload's identity: two traces never pool (their sha256 differs); the rest names it in words.
TRACE_KEY = ("trace_name", "trace_sha256", "trace_requests", "trace_duration_s", "trace_mean_rate")
WORKLOAD_KEY = (
    "workload",
    "endpoint",
    "prefix_len",
    "dataset",
    "input_len",
    "output_len",
    "range_ratio",
    *TRACE_KEY,
)
COMPARISON_KEY = ("model", *WORKLOAD_KEY)
# One server configuration on one workload on one host, measured one way: its load levels are one
# throughput/latency curve. Workload (dataset, lengths), engine settings (the server half of the matrix
# key), TP, where it ran and where its warm-ups ran are all part of it, so different workloads, a local
# stand-in host or a window that held the warm-ups never pool.
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
    "warmups_in_window",
)
POINT_KEY = (*CONFIG_KEY, "level_kind", "level_value")  # one load level of one configuration

# A campaign's rows from before workloads were recorded (schema < 5) ran the fixed profile on
# /v1/completions: they key as the same workload today's rows name. An old import's stay unknown.
_BEFORE_WORKLOADS = {"workload": DEFAULT_WORKLOAD, "endpoint": "completions"}

# Per-level warm-ups (`runs.level_warmups`, from b425c37) first ran as `vllm bench serve --num-warmups`,
# inside each repeat's measured window; since 1092ef0 they run apart, before the level's first server
# scrape. No column records which: both kinds of rows are schema 5 with the same suite version. A row
# of schema 6 or later was written after the change; an older one with warm-ups shows it in its own
# counters, the server having counted more successful requests over the window than the client measured
# (the warm-ups); without counters its start time is compared with the change's.
WARMUPS_APART_FROM_SCHEMA = 6
WARMUPS_APART_SINCE = datetime(2026, 12, 2, 10, 46, 54, tzinfo=UTC)  # 1092ef0's commit time
WARMUPS_IN_WINDOW_LABEL = "warm-ups in the measured window"


def warmups_in_window(run: LakeRow) -> bool:
    """Whether the run's per-level warm-ups ran inside its measured window (rows from before 1092ef0):
    its latencies and throughput then hold them too, and it is not the same measurement as a run that
    warmed up apart. False for a run without per-level warm-ups."""
    if not run.get("level_warmups") or (run.get("schema_version") or 0) >= WARMUPS_APART_FROM_SCHEMA:
        return False
    served, measured = run.get("server_request_success"), run.get("completed")
    if served is not None and measured is not None:
        return bool(served > measured)
    started = run.get("started_at")
    return isinstance(started, datetime) and started < WARMUPS_APART_SINCE


def key_value(run: LakeRow, key: str) -> Any:
    """The value of the key field `key` for `run`: a lake row's own, or the one it stands for."""
    if key == "host":
        return host_label(run)
    if key == "warmups_in_window":
        return warmups_in_window(run)
    if key == "engine_args":
        return run.get(key) or ""  # rows from before the column: no extra arguments recorded
    if run.get(key) is None and key in _BEFORE_WORKLOADS and run.get("execution_mode") != IMPORTED_MODE:
        return _BEFORE_WORKLOADS[key]
    return run.get(key)


_ONLY_WHEN_SET = {"warmups_in_window", *TRACE_KEY}


def short_id(fields: Mapping[str, object]) -> str:
    """12 hex digits that name the key `fields` (a point's, a configuration's, a comparison's). The
    warm-up flag and a trace's fields count only where they are set, so the points measured the way
    warm-ups run today, and every point of another workload, keep the ids they had before those fields."""
    values = [str(v) for k, v in fields.items() if v or k not in _ONLY_WHEN_SET]
    return hashlib.sha256(json.dumps(values).encode()).hexdigest()[:12]
