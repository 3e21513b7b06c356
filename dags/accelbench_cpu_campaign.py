"""Benchmark vLLM CPU on Graviton: plan (guards + memory fit), one server per instance type driven
through every load level, the raw evidence ingested into the Parquet lake (also what a failed
benchmark measured before it failed), a summary, and a watcher so that one failed benchmark fails
the run. Execution: a benchmark pod on the arm64 NodePool, or a local vLLM process (`execution_mode`).
"""

from __future__ import annotations

from accelbench.airflow.assets import CATALOG_ASSET
from accelbench.airflow.campaign_graph import measure_and_land
from accelbench.airflow.dag_defaults import (
    MODEL_PATTERN,
    VERSION_PATTERN,
    campaign_defaults,
    cpu_instance_type_items,
    cpu_instance_types,
    dag_kwargs,
    slos_schema,
)
from accelbench.core.modes import MODES, default_mode
from accelbench.sizing.fit import LOADGEN_MAX_IN_FLIGHT
from airflow.sdk import Param, dag, task

INSTANCE_TYPES = cpu_instance_types()
DEFAULTS = campaign_defaults()


@dag(
    dag_id="accelbench_cpu_campaign",
    schedule="0 3 * * 1",  # weekly, Monday 03:00 UTC, over the default matrix
    doc_md=__doc__,
    params={
        "instance_types": Param(
            DEFAULTS["instance_types"],
            type="array",
            minItems=1,
            uniqueItems=True,
            items=cpu_instance_type_items(INSTANCE_TYPES),
            description="Graviton3 or newer instance types (one server each; Graviton2 lacks BF16)",
        ),
        "model": Param(
            DEFAULTS["model"],
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
        "dtype": Param(
            DEFAULTS["dtype"], type="string", enum=["bfloat16"], description="Forced to bfloat16 on CPU"
        ),
        "quantization": Param(
            DEFAULTS["quantization"],
            type="string",
            enum=["none", "int8", "int4"],
            description="int8/int4 = a compressed-tensors W8A8/W4A8 checkpoint",
        ),
        "concurrency": Param(
            DEFAULTS["concurrency"],
            type="array",
            minItems=1,
            items={"type": "integer", "minimum": 1, "maximum": LOADGEN_MAX_IN_FLIGHT},
            description=f"Concurrency levels (at most {LOADGEN_MAX_IN_FLIGHT}: the load generator's sizing)",
        ),
        "input_len": Param(DEFAULTS["input_len"], type="integer", minimum=1, maximum=131072),
        "output_len": Param(DEFAULTS["output_len"], type="integer", minimum=1, maximum=32768),
        "prompts_per_level": Param(DEFAULTS["prompts_per_level"], type="integer", minimum=1, maximum=100000),
        "repeats": Param(DEFAULTS["repeats"], type="integer", minimum=1, maximum=20),
        "extra_engine_args": Param(
            DEFAULTS["extra_engine_args"],
            type="array",
            items={"type": "string", "pattern": r"^[A-Za-z0-9_.,:=/+@-]+$"},
            description="Extra `vllm serve` flags (checked by the planner; GPU-only flags are refused)",
        ),
        "slos": Param(
            DEFAULTS["slos"],
            **slos_schema("ttft_p99_ms", "tpot_p99_ms", "e2el_p99_ms"),
            description="Latency SLOs in ms: per-request goodput limits (vllm bench serve --goodput)",
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
        scheduled = dag_run.run_type != "manual"  # cron or backfill: an unconfigured install skips
        return plan_benchmarks(request, campaign_id(dag_run.dag_id, dag_run.run_id), as_of, scheduled)

    measure_and_land(plan())


accelbench_cpu_campaign()
