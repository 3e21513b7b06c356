"""Best levels measured on a local host, not on the instance type they name: never priced or ranked."""

from __future__ import annotations

from accelbench.report.columns import LATENCIES, RATES, SIZE, WHAT
from accelbench.report.slos import BestPoint
from accelbench.report.table import Inputs, Section, Table


def _local(inputs: Inputs) -> list[BestPoint]:
    return [b for b in inputs.best if not b.point.measured_on_instance]


TABLE = Table(
    name="local_results",
    row=BestPoint,
    compute=_local,
    columns=(*WHAT, "host", *RATES, *LATENCIES, *SIZE),  # never priced: no cost columns
    section=Section(
        heading="Local results (not measured on the instance)",
        anchor="local",
        table_id="local-table",
        text="""\
<p class="note">A local result was measured on the machine that ran the campaign, not on the instance type \
it names: it is good for comparing vLLM versions, engine settings and workloads with each other on that \
same host, and for checking that a configuration runs at all; it is not a throughput or a price of the \
instance type, so it is never priced or ranked against instance results.</p>
<p>{{ intervals_short }}</p>""",
    ),
)
