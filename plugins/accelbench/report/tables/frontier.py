"""The price-performance frontier per model and workload: best points measured on their instance that
no other point of the same model and workload beats on cost and on every p99 (TTFT, TPOT, E2EL)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accelbench.report.columns import LATENCIES, WHAT
from accelbench.report.pricing import cost_order
from accelbench.report.table import Inputs, Section, Table


def frontier(
    best: Sequence[dict[str, Any]], cost: str = "on_demand_usd_per_1m_output_tokens"
) -> list[dict[str, Any]]:
    """The frontier among `best` (the best levels under the SLOs): those measured on their instance and
    priced that no other such point of the same comparison beats on cost and on every p99 at once."""
    priced = [p for p in best if p["measured_on_instance"] and p.get(cost) is not None]

    def as_good(q: dict[str, Any], p: dict[str, Any], key: str) -> bool:
        return p.get(key) is None or (q.get(key) is not None and q[key] <= p[key])

    def dominated(p: dict[str, Any]) -> bool:
        return any(
            q["comparison_id"] == p["comparison_id"]
            and q is not p
            and all(as_good(q, p, k) for k in (cost, *LATENCIES))
            and any(q.get(k) is not None and p.get(k) is not None and q[k] < p[k] for k in (cost, *LATENCIES))
            for q in priced
        )

    return sorted((p for p in priced if not dominated(p)), key=cost_order)


def _rows(inputs: Inputs) -> list[dict[str, Any]]:
    return frontier(inputs.best)


TABLE = Table(
    name="frontier",
    compute=_rows,
    columns=(*WHAT, "on_demand_usd_per_1m_output_tokens", *LATENCIES, "output_throughput"),
    section=Section(
        heading="Price-performance frontier",
        table_id="frontier-table",
        text="""\
<p>Per model and workload, best points measured on the instance that no other point beats on on-demand cost
per 1M output tokens and on every p99 latency at once (their estimates). {{ intervals_short }}</p>""",
    ),
)
