"""The load searches' capacities under the SLOs, priced at the capacity from the search's own probe
(`accelbench.report.searches.capacity_rows` makes the rows: the points need them too)."""

from __future__ import annotations

from typing import Any

from accelbench.report.columns import COSTS
from accelbench.report.table import Inputs, Section, Table


def _capacities(inputs: Inputs) -> list[dict[str, Any]]:
    return inputs.capacities


TABLE = Table(
    name="capacities",
    compute=_capacities,
    columns=(
        "model_short",
        "instance_type",
        "vllm_version",
        "search_variable",
        "capacity",
        "bracket",
        "request_throughput",  # at the capacity: the search's own probe there, priced like a point
        "output_throughput",
        *COSTS,
        "limiting_metric",
        "search_slos",
        "search_outcome",
        "search_precision",
        "probes",
        "server_s",
        "host",
    ),
    section=Section(
        heading="Capacity under the SLOs",
        anchor="capacity",
        table_id="capacity-table",
        omit_when_empty=True,
        then=("planner.html.j2", "plots.html.j2"),  # the capacity planner below uses the capacities
        text="""\
<p>Per configuration searched (a load search, not fixed levels), the largest load whose every repeat met
the search's SLOs, and the bracket it lies in: the largest passing and the smallest failing load probed.
At the capacity (the passing end), the requests and output tokens per second are the medians over the
repeats of the search's own probe there, and the cost per 1M output and total tokens is worked out from them
as for every point: at the price in force at that probe's newest repeat, on-demand and spot, and only for a
search measured on its instance type (a local search is not priced). The limiting metric is the SLO the
failing end missed furthest; probes and server-seconds are what the search cost. The outcome
"upper_bound" means the upper bound passed: the capacity is at least that load, and is shown and priced
there. Any other outcome than "capacity" says why there is none (the lower bound failed, the client could
not send the load, or a p99 rested on too few requests), and there is no cost. The capacity planner below
uses a searched capacity as its level where it holds the planner's limits.</p>""",
    ),
)
