"""Make a timed trace (the JSONL vLLM's client replays, lengths and times only, never prompt text) and store
it in the lake under `traces/<name>.jsonl`, where local workers and benchmark pods can read it: from the
lake's requests of an earlier run (`run_id`: one level's repeat, as it was sent), from a usage log (a worker
path or an s3:// URI; CSV with a header row, or JSONL; the columns named here; optionally only the busiest
window), or the generated day the project ships. A bad row is refused with its number and column. The same
as `accelbench trace` on the command line (docs/guides/campaigns.md).
"""

from __future__ import annotations

from accelbench.airflow.dag_defaults import dag_kwargs
from accelbench.traces.timed_trace import NAME_PATTERN
from airflow.sdk import Param, dag, task


@dag(
    dag_id="accelbench_make_trace",
    schedule=None,
    doc_md=__doc__,
    params={
        "name": Param(
            "my-traffic", type="string", pattern=NAME_PATTERN, description="traces/<name>.jsonl in the lake"
        ),
        "source": Param("usage_log", enum=["usage_log", "lake_run", "generated"], description="what from"),
        "usage_log": Param("", type="string", description="usage_log: a worker path or an s3:// URI"),
        "timestamp_column": Param("timestamp", type="string", minLength=1, description="usage_log: time"),
        "prompt_tokens_column": Param("prompt_tokens", type="string", minLength=1, description="its prompt"),
        "completion_tokens_column": Param(
            "completion_tokens", type="string", minLength=1, description="its completion tokens"
        ),
        "window_s": Param(
            None, type=["null", "number"], exclusiveMinimum=0, description="keep the busiest window (s)"
        ),
        "run_id": Param("", type="string", description="lake_run: a runs row's run_id"),
    },
    **dag_kwargs("traces"),
)
def accelbench_make_trace() -> None:
    @task
    def make_trace(params: dict | None = None) -> dict:
        assert params is not None  # Airflow passes the run's params
        from accelbench.airflow.tasks.traces import make_trace as make

        return make(dict(params))

    make_trace()


accelbench_make_trace()
