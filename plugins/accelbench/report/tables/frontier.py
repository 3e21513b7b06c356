"""The price-performance frontier per model and workload: best points measured on their instance that
no other point of the same model and workload beats on cost and on every p99 (TTFT, TPOT, E2EL)."""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.report.columns import LATENCIES, WHAT
from accelbench.report.pricing import cost_order
from accelbench.report.slos import BestPoint
from accelbench.report.table import Inputs, Section, Table


def frontier(best: Sequence[BestPoint]) -> list[BestPoint]:
    """The frontier among `best` (the best levels under the SLOs): those measured on their instance and
    priced that no other such point of the same comparison beats on on-demand cost per 1M output tokens
    and on every p99 at once (their estimates)."""

    def figures(b: BestPoint) -> tuple[float | None, ...]:
        p = b.point
        return (p.on_demand.usd_per_1m_output_tokens.estimate, *(p.estimate(k) for k in LATENCIES))

    priced = [b for b in best if b.point.measured_on_instance and figures(b)[0] is not None]

    def dominated(b: BestPoint) -> bool:
        mine = figures(b)
        for other in priced:
            if other is b or other.point.comparison_id != b.point.comparison_id:
                continue
            theirs = figures(other)
            pairs = list(zip(theirs, mine, strict=True))
            as_good = all(p is None or (q is not None and q <= p) for q, p in pairs)
            if as_good and any(q is not None and p is not None and q < p for q, p in pairs):
                return True
        return False

    return sorted((b for b in priced if not dominated(b)), key=lambda b: cost_order(b.point))


def _rows(inputs: Inputs) -> list[BestPoint]:
    return frontier(inputs.best)


TABLE = Table(
    name="frontier",
    row=BestPoint,
    compute=_rows,
    columns=(*WHAT, "on_demand_usd_per_1m_output_tokens", *LATENCIES, "output_throughput"),
    section=Section(
        unmeasured="`execution_mode: kubernetes`",
        heading="Price-performance frontier",
        table_id="frontier-table",
        text="""\
<p>Per model and workload, best points measured on the instance that no other point beats on on-demand cost
per 1M output tokens and on every p99 latency at once (their estimates). {{ intervals_short }}</p>""",
    ),
)
