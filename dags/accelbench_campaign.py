"""Benchmark vLLM on Graviton CPUs, and on the GPU and Neuron types beside them: plan (guards + memory fit,
the runtime following each type's tier), one server per instance type and workload driven through every load
level, the raw evidence ingested into the Parquet lake (also what a failed benchmark measured before it
failed), a summary, and a watcher so that one failed benchmark fails the run. Execution: a benchmark pod on
the tier's NodePool, or a local vLLM process (`execution_mode`).

Weekly (Monday 03:00 UTC) over the default matrix, and from the trigger form or REST. Until it was renamed
its id was `accelbench_cpu_campaign`, which still triggers the same campaign (an unscheduled DAG built by the
same function, `accelbench.airflow.campaign_graph.campaign_dag`: same params, same tasks) and will be removed
in a later release.
"""

from __future__ import annotations

from accelbench.airflow.campaign_graph import campaign_dag

campaign_dag(
    "accelbench_campaign",
    "0 3 * * 1",  # weekly, Monday 03:00 UTC, over the default matrix
    __doc__,
    "Benchmark vLLM on the catalog's CPU, GPU and Neuron types (weekly, and on demand)",
)
