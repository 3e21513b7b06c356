"""What the campaigns cost: per campaign, the sum of its servers' bills, and per configuration (server), what
its node was paid for at the price in force on its start (`accelbench.lake.costs` wrote the rows)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from accelbench.core.price import SECONDS_PER_HOUR
from accelbench.report.labels import short_model
from accelbench.report.table import Inputs, Section, Table

SERVER_FIELDS = (
    "campaign_id",
    "instance_type",
    "model",
    "vllm_version",
    "execution_mode",
    "capacity_type",
    "pricing_model",
    "billed_s",
    "usd_per_hour",
    "usd",
    "price_source",
    "unpriced",
)


def server_costs(inputs: Inputs) -> list[dict[str, Any]]:
    rows = [
        {k: c.get(k) for k in SERVER_FIELDS} | {"model_short": short_model(c["model"])} for c in inputs.costs
    ]
    return sorted(rows, key=lambda r: (r["campaign_id"], r["instance_type"], r["model"] or ""))


def campaign_costs(inputs: Inputs) -> list[dict[str, Any]]:
    """One row per campaign: its servers, their billed hours, the priced servers' sum, and how many are
    unpriced (a local server on a stand-in host, a capacity type without a price)."""
    by_campaign: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in inputs.costs:
        by_campaign[c["campaign_id"]].append(c)
    rows = []
    for campaign, servers in sorted(by_campaign.items()):
        priced = [s["usd"] for s in servers if s["usd"] is not None]
        rows.append(
            {
                "campaign_id": campaign,
                "servers": len(servers),
                "billed_hours": sum(s["billed_s"] or 0.0 for s in servers) / SECONDS_PER_HOUR,
                "campaign_usd": sum(priced) if priced else None,
                "unpriced_servers": len(servers) - len(priced),
            }
        )
    return rows


CAMPAIGNS = Table(
    name="campaign_costs",
    compute=campaign_costs,
    columns=("campaign_id", "servers", "billed_hours", "campaign_usd", "unpriced_servers"),
    section=Section(
        heading="What the campaigns cost",
        anchor="campaign-costs",
        table_id="campaign-costs-table",
        omit_when_empty=True,
        text="""\
<p>What each campaign's servers were paid for: from the node's launch for the benchmark pod (or its
scheduling on a node that was already there) to the pod's deletion, at the price in force when it started,
on-demand or spot as the node's Karpenter capacity type says. A local server is priced only when its host is
the planned instance type, at the on-demand price; otherwise it is counted as unpriced. Per configuration
below.</p>""",
    ),
)

SERVERS = Table(
    name="server_costs",
    compute=server_costs,
    columns=(
        "campaign_id",
        "instance_type",
        "model_short",
        "vllm_version",
        "capacity_type",
        "billed_s",
        "usd_per_hour",
        "usd",
        "price_source",
        "unpriced",
    ),
    section=Section(
        heading="What each configuration cost",
        anchor="server-costs",
        table_id="server-costs-table",
        omit_when_empty=True,
        text="""\
<p>One row per server of a campaign: its billed seconds, the hourly price applied and where it came from,
and what it cost, or why it is unpriced.</p>""",
    ),
)
