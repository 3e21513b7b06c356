"""What the campaigns cost: per campaign, the sum of its servers' bills, and per configuration (server), what
its node was paid for at the price in force on its start (`accelbench.lake.costs` wrote the rows)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from accelbench.core.price import SECONDS_PER_HOUR
from accelbench.lake.schemas import LakeRow
from accelbench.report.labels import short_model
from accelbench.report.table import Inputs, Section, Table


@dataclass(frozen=True, slots=True)
class ServerCost:
    """What one server of a campaign cost (a `costs` row of the lake, `accelbench.lake.costs`)."""

    campaign_id: str
    instance_type: str
    model: str | None
    vllm_version: str | None
    execution_mode: str | None
    capacity_type: str | None
    pricing_model: str | None
    billed_s: float | None
    usd_per_hour: float | None
    usd: float | None
    price_source: str | None
    unpriced: str | None
    model_short: str


@dataclass(frozen=True, slots=True)
class CampaignCost:
    """What a campaign cost: its servers, their billed hours, the priced servers' sum, the unpriced ones."""

    campaign_id: str
    servers: int
    billed_hours: float
    campaign_usd: float | None
    unpriced_servers: int


def _server(c: LakeRow) -> ServerCost:
    return ServerCost(
        campaign_id=c["campaign_id"],
        instance_type=c["instance_type"],
        model=c.get("model"),
        vllm_version=c.get("vllm_version"),
        execution_mode=c.get("execution_mode"),
        capacity_type=c.get("capacity_type"),
        pricing_model=c.get("pricing_model"),
        billed_s=c.get("billed_s"),
        usd_per_hour=c.get("usd_per_hour"),
        usd=c.get("usd"),
        price_source=c.get("price_source"),
        unpriced=c.get("unpriced"),
        model_short=short_model(c["model"]),
    )


def server_costs(inputs: Inputs) -> list[ServerCost]:
    return sorted(map(_server, inputs.costs), key=lambda r: (r.campaign_id, r.instance_type, r.model or ""))


def campaign_costs(inputs: Inputs) -> list[CampaignCost]:
    """One row per campaign: its servers, their billed hours, the priced servers' sum, and how many are
    unpriced (a local server on a stand-in host, a capacity type without a price)."""
    by_campaign: dict[str, list[LakeRow]] = defaultdict(list)
    for c in inputs.costs:
        by_campaign[c["campaign_id"]].append(c)
    rows = []
    for campaign, servers in sorted(by_campaign.items()):
        priced = [s["usd"] for s in servers if s["usd"] is not None]
        rows.append(
            CampaignCost(
                campaign_id=campaign,
                servers=len(servers),
                billed_hours=sum(s["billed_s"] or 0.0 for s in servers) / SECONDS_PER_HOUR,
                campaign_usd=sum(priced) if priced else None,
                unpriced_servers=len(servers) - len(priced),
            )
        )
    return rows


CAMPAIGNS = Table(
    name="campaign_costs",
    row=CampaignCost,
    compute=campaign_costs,
    columns=("campaign_id", "servers", "billed_hours", "campaign_usd", "unpriced_servers"),
    section=Section(
        heading="What the campaigns cost",
        anchor="campaign-costs",
        table_id="campaign-costs-table",
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
    row=ServerCost,
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
        text="""\
<p>One row per server of a campaign: its billed seconds, the hourly price applied and where it came from,
and what it cost, or why it is unpriced.</p>""",
    ),
)
