"""Task body of the trace DAG: a timed trace from the lake's requests of a run, a usage log, or the generated
day, stored in the lake (`accelbench.lake.traces`)."""

from __future__ import annotations

import logging
from typing import Any

from accelbench.airflow.tasks.common import fail_on_library_error
from accelbench.core import traces
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake
from accelbench.lake.traces import run_trace, store_trace, usage_rows

log = logging.getLogger(__name__)


@fail_on_library_error
def make_trace(params: dict[str, Any]) -> dict[str, Any]:
    lake = Lake.from_env()
    source = params["source"]
    if source == "lake_run":
        if not params.get("run_id"):
            raise ConfigError("run_id", params.get("run_id"), "the run whose requests to replay")
        made = run_trace(lake, params["run_id"])
    elif source == "usage_log":
        if not params.get("usage_log"):
            raise ConfigError("usage_log", params.get("usage_log"), "a worker path or an s3:// URI")
        columns = (
            params["timestamp_column"],
            params["prompt_tokens_column"],
            params["completion_tokens_column"],
        )
        made = traces.from_usage(usage_rows(params["usage_log"]), *columns, window_s=params.get("window_s"))
    else:
        made = traces.generated_day()
    stored = store_trace(lake, params["name"], made)
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
