"""The load searches' capacities under the SLOs, priced at the capacity from the search's own probe
(`accelbench.report.searches.capacity_rows` makes the rows: the points need them too)."""

from __future__ import annotations

from accelbench.report.columns import COSTS
from accelbench.report.model import Capacity
from accelbench.report.table import Inputs, Section, Table


def _capacities(inputs: Inputs) -> list[Capacity]:
    return inputs.capacities


TABLE = Table(
    name="capacities",
    row=Capacity,
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
        unmeasured="`load_mode: search`",
        heading="Capacity under the SLOs",
        anchor="capacity",
        table_id="capacity-table",
        then=("planner.html.j2", "plots.html.j2"),  # the capacity planner below uses the capacities
        text="""\
<p>Per configuration searched (a load search, not fixed levels), the largest load whose every repeat met
the search's SLOs, and the bracket it lies in: the largest passing and the smallest failing load probed.
Where the search judged its probes by intervals (its plan's <code>max_requests</code>), each p99 was judged
on its interval over the probe's requests (each look at 1 - 5% / its most looks, Bonferroni), moved out by
the host's run-to-run spread of that p99 (t with its degrees of freedom: pooled from the loads the search
measured twice, the lake's earlier runs of the point, and a prior of 12.6% on 3 df): a probe whose interval
held the limit was measured again, and one still undecided at the cap never counts as meeting, nor as an end
of the bracket (the search goes on to a load judged to miss). Its capacity then comes from every probe
together (the largest load shown to meet under the fitted crossing), and the bracket column adds its 95%
interval: each SLO's p99 estimates and bounds fitted monotone in the load (isotonic regression weighted by
requests), each bound first widened by the host's spread at the search's end, from the largest load whose
fitted upper bound meets the limit to the smallest whose fitted lower bound misses it, or else the smallest
load judged to miss ("-": open on that side; "N undecided": the highest load measured, left undecided).
At the capacity (the passing end), the requests and output tokens per second are the medians over the
repeats of the search's own probe there, and the cost per 1M output and total tokens is worked out from them
as for every point: at the price in force at that probe's newest repeat, on-demand and spot, and only for a
search measured on its instance type (a local search is not priced). The limiting metric is the SLO the
failing end missed furthest; probes and server-seconds are what the search cost. The outcome
"upper_bound" means the upper bound passed, "saturated" that bracketing stopped where the median latency
grew faster than the load (a log-log slope over 1, tested one-sided at 95%: more load only queued): the
capacity is at least that load, and is shown and priced there. Any other outcome says where and why there
is none: the lower bound failed, the client could not send the load or keep its requests in flight, a p99
rested on too few requests, a probe's level failed (the bracket found before it is kept), or the host
drifted (the first probe, measured again at the end, disagreed with itself beyond both intervals: both
figures are given, and no capacity). The capacity planner below uses a searched capacity as its level where
it holds the planner's limits.</p>""",
    ),
)
