"""Timed traces and the lake: a trace from the lake's own `requests` table (`accelbench.core.traces.
from_requests`: one run's requests, one level's repeat, as they were sent), a usage log read wherever it
lies (a worker path or S3), and traces stored under the lake's `traces/`, where a benchmark pod reads
them."""

from __future__ import annotations

import re

import pyarrow.dataset as ds
from fsspec.core import url_to_fs

from accelbench.core.traces import NAME_PATTERN, TraceRequest, dumps, from_requests, identity, rows_of
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake, storage_options

NAME = re.compile(NAME_PATTERN)


def run_trace(lake: Lake, run_id: str) -> list[TraceRequest]:
    columns = ["start_offset_s", "input_tokens", "output_tokens"]
    rows = lake.read("requests", ds.field("run_id") == run_id, columns=columns).to_pylist()
    if not rows:
        raise ConfigError("run_id", run_id, f"no requests of this run in the lake at {lake.uri}")
    return from_requests(rows)


def usage_rows(uri: str) -> list[dict[str, object]]:
    """A usage log's rows from a worker path or an s3:// URI (`accelbench.core.traces.rows_of`)."""
    try:
        fs, path = url_to_fs(uri, **storage_options(uri))
        text = fs.cat_file(path).decode()
    except (OSError, ValueError, ImportError) as exc:
        raise ConfigError("usage_log", uri, f"cannot read it ({type(exc).__name__}: {exc})") from None
    return rows_of(text, uri)


def store_trace(lake: Lake, name: str, trace: list[TraceRequest]) -> dict[str, object]:
    """The trace as `traces/<name>.jsonl` in the lake; its identity and URI."""
    if not NAME.match(name):
        raise ConfigError(
            "name", name, "letters, digits, '.', '_' or '-', at most 100, first a letter or digit"
        )
    text = dumps(trace)
    uri = lake.uri_of(lake.put_bytes(text.encode(), "traces", f"{name}.jsonl"))
    return {"uri": uri, **identity(text, trace)}
