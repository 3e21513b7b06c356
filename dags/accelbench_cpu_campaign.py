"""**`accelbench_cpu_campaign` is the old id of `accelbench_campaign`**, kept so that REST calls, scripts and
bookmarks that name it keep working. It is built by the same function as `accelbench_campaign`
(`accelbench.airflow.campaign_graph.campaign_dag`), with the same params and the same tasks, so a run of
either id with the same conf is the same campaign. It has no schedule: the weekly run is
`accelbench_campaign`'s. It will be removed in a later release; trigger `accelbench_campaign` instead.

The campaign: plan (guards + memory fit, the runtime following each type's tier: Graviton CPU, GPU and
Neuron), one server per instance type and workload driven through every load level, the raw evidence
ingested into the Parquet lake, a summary, and a watcher so that one failed benchmark fails the run.
"""

from __future__ import annotations

from accelbench.airflow.campaign_graph import campaign_dag

campaign_dag(
    "accelbench_cpu_campaign",
    None,  # the weekly run is accelbench_campaign's: not twice
    __doc__,
    "Old id of accelbench_campaign (same params and tasks), kept for REST calls and bookmarks; removed in a "
    "later release",
)
