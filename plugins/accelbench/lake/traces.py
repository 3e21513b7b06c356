"""Timed traces and the lake: a trace from the lake's own `requests` table (`accelbench.traces.builders.
from_requests`: one run's requests, one level's repeat, as they were sent), a usage log read wherever it
lies (a worker path or S3), and traces stored under the lake's `traces/`, where a benchmark pod reads
them."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
from botocore.exceptions import BotoCoreError, ClientError
from fsspec.core import url_to_fs

from accelbench.core.workloads import TraceIdentity
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake, storage_options
from accelbench.traces.builders import from_requests, from_usage, generated_day, rows_of
from accelbench.traces.timed_trace import NAME_PATTERN, TraceRequest, dumps, identify, identity

log = logging.getLogger(__name__)
NAME = re.compile(NAME_PATTERN)


def run_trace(lake: Lake, run_id: str) -> list[TraceRequest]:
    columns = ["start_offset_s", "input_tokens", "output_tokens"]
    rows = lake.read("requests", ds.field("run_id") == run_id, columns=columns).to_pylist()
    if not rows:
        raise ConfigError("run_id", run_id, f"no requests of this run in the lake at {lake.uri}")
    return from_requests(rows)


def read_text(uri: str, field: str) -> str:
    """A file from a worker path or an s3:// URI; a ConfigError naming `field` when it cannot be read."""
    try:
        fs, path = url_to_fs(uri, **storage_options(uri))
        return bytes(fs.cat_file(path)).decode()
    except (
        OSError,
        ValueError,
        ImportError,
        BotoCoreError,
        ClientError,
    ) as exc:  # UnicodeError: a ValueError
        raise ConfigError(field, uri, f"cannot read it ({type(exc).__name__}: {exc})") from None


def usage_rows(uri: str) -> list[dict[str, object]]:
    """A usage log's rows from a worker path or an s3:// URI (`accelbench.traces.builders.rows_of`)."""
    return rows_of(read_text(uri, "usage_log"), uri)


def trace_uri(location: str, lake_uri: str) -> str:
    """Where a campaign's `trace` lies: a worker path or a URI as given, a bare name the lake's stored trace
    (`traces/<name>.jsonl`, what `store_trace` and the accelbench_make_trace DAG write)."""
    if NAME.match(location) and "/" not in location and not location.endswith(".jsonl"):
        return f"{lake_uri.rstrip('/')}/traces/{location}.jsonl"
    return location


def read_trace(location: str, lake_uri: str) -> TraceIdentity:
    """The campaign's trace read and checked (every line; a bad one named with its number) for planning."""
    uri = trace_uri(location, lake_uri)
    text = read_text(uri, "trace")
    name = Path(uri.rsplit("/", 1)[-1]).stem
    try:
        return identify(text, name, uri)
    except ConfigError as exc:
        raise ConfigError("trace", location, f"{exc.field}: {exc.why} (value {exc.value!r})") from None


def fetch_trace(trace: TraceIdentity, dest: Path) -> None:
    """The load generator's copy of a spec's trace, the very file planned (its sha256 checked: a trace
    replaced since would measure other traffic under the planned identity)."""
    text = read_text(trace.uri, "trace")
    found = hashlib.sha256(text.encode()).hexdigest()
    if found != trace.sha256:
        why = f"its sha256 is {found[:12]} now, {trace.sha256[:12]} when the campaign was planned: plan again"
        raise ConfigError("trace", trace.uri, why)
    dest.write_text(text)


def store_trace(lake: Lake, name: str, trace: list[TraceRequest]) -> dict[str, object]:
    """The trace as `traces/<name>.jsonl` in the lake; its identity and URI."""
    if not NAME.match(name):
        raise ConfigError(
            "name", name, "letters, digits, '.', '_' or '-', at most 100, first a letter or digit"
        )
    text = dumps(trace)
    uri = lake.uri_of(lake.put_bytes(text.encode(), "traces", f"{name}.jsonl"))
    return {"uri": uri, **identity(text, trace)}


@dataclass(frozen=True)
class TraceSource:
    """What the trace DAG makes a trace from: a run's requests in the lake (`lake_run`, `run_id`), a usage
    log (`usage_log`: its URI and columns, and the window to keep), or the generated day (anything else);
    stored as `name`."""

    name: str
    source: str
    run_id: str | None = None
    usage_log: str | None = None
    columns: tuple[str, str, str] | None = None  # timestamp, prompt tokens, completion tokens
    window_s: float | None = None

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> TraceSource:
        """The trace DAG's params (the usage log's columns read only for a usage log)."""
        columns = None
        if params["source"] == "usage_log":
            columns = (
                params["timestamp_column"],
                params["prompt_tokens_column"],
                params["completion_tokens_column"],
            )
        return cls(
            params["name"],
            params["source"],
            params.get("run_id"),
            params.get("usage_log"),
            columns,
            params.get("window_s"),
        )


def make_trace(lake: Lake, source: TraceSource) -> dict[str, object]:
    """The trace of `source`, stored in the lake (`store_trace`) and logged; its identity and URI."""
    if source.source == "lake_run":
        if not source.run_id:
            raise ConfigError("run_id", source.run_id, "the run whose requests to replay")
        made = run_trace(lake, source.run_id)
    elif source.source == "usage_log":
        if not source.usage_log or source.columns is None:
            raise ConfigError("usage_log", source.usage_log, "a worker path or an s3:// URI")
        made = from_usage(usage_rows(source.usage_log), *source.columns, window_s=source.window_s)
    else:
        made = generated_day()
    stored = store_trace(lake, source.name, made)
    log.info(
        "trace %s: %d requests over %.1f s (%.2f req/s), input p50/p99 %.0f/%.0f, output p50/p99 %.0f/%.0f, "
        "sha256 %s",
        stored["uri"],
        stored["trace_requests"],
        stored["trace_duration_s"],
        stored["trace_mean_rate"],
        stored["trace_input_p50"],
        stored["trace_input_p99"],
        stored["trace_output_p50"],
        stored["trace_output_p99"],
        stored["trace_sha256"],
    )
    return stored
