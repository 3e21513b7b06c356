"""Benchmark vLLM CPU on Graviton: plan (guards + memory fit), one server per instance type driven
through every load level, the raw evidence ingested into the Parquet lake (also what a failed
benchmark measured before it failed), a summary, and a watcher so that one failed benchmark fails
the run. Execution: a benchmark pod on the arm64 NodePool, or a local vLLM process (`execution_mode`).
"""

from __future__ import annotations

import os
from datetime import timedelta

from accelbench.airflow.assets import CATALOG_ASSET, LAKE_ASSET
from accelbench.airflow.benchmark_operator import NODE_XCOM, BenchmarkOperator, run_date
from accelbench.airflow.dag_defaults import (
    DEFAULT_SLOS,
    MODEL_PATTERN,
    VERSION_PATTERN,
    cpu_instance_types,
    dag_kwargs,
    slos_schema,
)
from accelbench.execution.modes import MODES, default_mode
from airflow.sdk import Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

INSTANCE_TYPES = cpu_instance_types()
DEFAULT_MODEL = os.environ.get("ACCELBENCH_DEFAULT_MODEL", "Qwen/Qwen2.5-0.5B-Instruct")


@dag(
    dag_id="accelbench_cpu_campaign",
    schedule="0 3 * * 1",  # weekly, Monday 03:00 UTC, over the default matrix
    doc_md=__doc__,
    params={
        "instance_types": Param(
            ["m8g.xlarge"],
            type="array",
            minItems=1,
            uniqueItems=True,
            items={"type": "string", "enum": INSTANCE_TYPES},
            description="Graviton instance types (one server each)",
        ),
        "model": Param(
            DEFAULT_MODEL,
            type="string",
            minLength=1,
            maxLength=200,
            pattern=MODEL_PATTERN,
            description="Model id in the model store, or a local path",
        ),
        "version": Param(
            None,
            type=["null", "string"],
            pattern=VERSION_PATTERN,
            description="vLLM CPU version; empty = the newest in the catalog at the run's date",
        ),
        "dtype": Param("bfloat16", type="string", enum=["bfloat16"], description="Forced to bfloat16 on CPU"),
        "quantization": Param(
            "none",
            type="string",
            enum=["none", "int8", "int4"],
            description="int8/int4 = a compressed-tensors W8A8/W4A8 checkpoint",
        ),
        "concurrency": Param(
            [1, 4, 16],
            type="array",
            minItems=1,
            items={"type": "integer", "minimum": 1},
            description="Concurrency levels",
        ),
        "input_len": Param(512, type="integer", minimum=1, maximum=131072),
        "output_len": Param(128, type="integer", minimum=1, maximum=32768),
        "prompts_per_level": Param(200, type="integer", minimum=1, maximum=100000),
        "repeats": Param(2, type="integer", minimum=1, maximum=20),
        "extra_engine_args": Param(
            [],
            type="array",
            items={"type": "string", "pattern": r"^[A-Za-z0-9_.,:=/+@-]+$"},
            description="Extra `vllm serve` flags (checked by the planner; GPU-only flags are refused)",
        ),
        "slos": Param(
            dict(DEFAULT_SLOS),
            **slos_schema("ttft_p99_ms", "tpot_p99_ms", "e2el_p99_ms"),
            description="Latency SLOs in ms: per-request goodput limits now, the p99 limits of reports",
        ),
        "execution_mode": Param(
            default_mode(),
            type="string",
            enum=list(MODES),
            description="kubernetes = a benchmark pod per server on the arm64 NodePool; local = a vLLM "
            "process on the worker (default: ACCELBENCH_EXECUTION_MODE)",
        ),
    },
    **dag_kwargs("campaign"),
)
def accelbench_cpu_campaign() -> None:
    @task(inlets=[CATALOG_ASSET])
    def plan(params: dict | None = None, dag_run=None) -> list[dict]:  # type: ignore[no-untyped-def]
        from accelbench.airflow.campaign_tasks import campaign_id
        from accelbench.airflow.tasks import plan_benchmarks

        request = dict(params)
        as_of = dag_run.logical_date or dag_run.run_after
        return plan_benchmarks(request, campaign_id(dag_run.dag_id, dag_run.run_id), as_of)

    @task(map_index_template="{{ instance_type }}", trigger_rule="all_done")
    def ingest(spec: dict, dag_run=None, ti=None) -> dict:  # type: ignore[no-untyped-def]
        from accelbench.airflow.campaign_tasks import ingest_spec

        get_current_context()["instance_type"] = spec["server"]["instance_type"]  # type: ignore[typeddict-unknown-key]
        hints = ti.xcom_pull(task_ids="benchmark", map_indexes=ti.map_index, key=NODE_XCOM) or {}
        result = ti.xcom_pull(task_ids="benchmark", map_indexes=ti.map_index)
        return ingest_spec(spec, dag_run.run_id, run_date(dag_run), result, hints)

    @task(trigger_rule="all_done", outlets=[LAKE_ASSET])
    def summary(dag_run=None) -> dict:  # type: ignore[no-untyped-def]
        from accelbench.airflow.campaign_tasks import campaign_id, summarize

        return summarize(campaign_id(dag_run.dag_id, dag_run.run_id), run_date(dag_run))

    @task(trigger_rule="one_failed")
    def watcher() -> None:
        raise AirflowFailException("a task of this campaign failed: see the failed task's log")

    specs = plan()
    # One retry, for a worker that died: kubernetes mode reconnects to the running pod, local mode
    # measures again. A failed level or a server that cannot start fails without retry.
    results = BenchmarkOperator.partial(
        task_id="benchmark",
        map_index_template="{{ task.benchmark_spec.server.instance_type }}",
        retries=1,
        retry_delay=timedelta(seconds=30),
    ).expand(spec=specs)
    ingested = ingest.expand(spec=specs)
    done = summary()
    results >> ingested >> done
    [results, ingested, done] >> watcher()


accelbench_cpu_campaign()
