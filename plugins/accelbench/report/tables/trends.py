"""Trends across campaigns: each configuration's best level under the SLOs in every campaign that
measured it (`accelbench.report.trends`), with what changed since its campaign before (vLLM version,
price). The page draws it as the trends chart (`accelbench.report.charts.trends`)."""

from __future__ import annotations

from accelbench.report.table import Inputs, Section, Table
from accelbench.report.trends import TrendPoint


def _rows(inputs: Inputs) -> list[TrendPoint]:
    return inputs.trends


TABLE = Table(
    name="trends",
    row=TrendPoint,
    compute=_rows,
    columns=(
        "campaign_date",
        "configuration",
        "workload",
        "level",
        "on_demand_usd_per_1m_output_tokens",
        "p99_ttft_ms",
        "p99_tpot_ms",
        "vllm_change",
        "price_change",
    ),
    section=Section(
        heading="Trends across campaigns",
        table_id="trends-table",
        unmeasured="a second campaign of a configuration",
        text="""\
<p>Per configuration measured by two or more campaigns, its best level under the SLOs in each, priced at
that campaign's time; a change of vLLM version or price since the campaign before is named.
{{ intervals_short }}</p>""",
    ),
)
