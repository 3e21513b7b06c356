"""Task body of the trace DAG: a timed trace from the lake's requests of a run, a usage log, or the generated
day, stored in the lake (`accelbench.lake.traces`)."""

from __future__ import annotations

from typing import Any

from accelbench.airflow.tasks.common import fail_on_library_error
from accelbench.lake.store import Lake
from accelbench.lake.traces import TraceSource
from accelbench.lake.traces import make_trace as make


@fail_on_library_error
def make_trace(params: dict[str, Any]) -> dict[str, Any]:
    return make(Lake.from_env(), TraceSource.of(params))
