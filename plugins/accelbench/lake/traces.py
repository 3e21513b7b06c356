"""A timed trace from the lake's own `requests` table (`accelbench.core.traces.from_requests`): one run's
requests (one level's repeat) as they were sent, lengths and send times only."""

from __future__ import annotations

import pyarrow.dataset as ds

from accelbench.core.traces import TraceRequest, from_requests
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake


def run_trace(lake: Lake, run_id: str) -> list[TraceRequest]:
    columns = ["start_offset_s", "input_tokens", "output_tokens"]
    rows = lake.read("requests", ds.field("run_id") == run_id, columns=columns).to_pylist()
    if not rows:
        raise ConfigError("run_id", run_id, f"no requests of this run in the lake at {lake.uri}")
    return from_requests(rows)
