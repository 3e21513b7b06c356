"""A campaign's summary, read back from its date partition of the lake: one line per run, the hosts that
drifted, its load searches, its quality (landed here: every benchmark has) and its costs at the catalog's
prices (landed here too), as the campaign DAG's last task logs and returns it."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pyarrow.dataset as ds

from accelbench.catalog.db import CatalogOpener
from accelbench.config import Settings
from accelbench.lake.costs import cost_text, land_costs, total
from accelbench.lake.quality import land_quality
from accelbench.lake.store import Lake
from accelbench.landing.capacity import capacity_text
from accelbench.report.hosts import host_label, measured_on_instance
from accelbench.report.quality import quality_gate, quality_text
from accelbench.report.records import records
from accelbench.report.samples import read_samples
from accelbench.report.sources import price_history
from accelbench.report.tables.ab_comparisons import ab_comparisons

log = logging.getLogger(__name__)
HEADER = (
    f"{'run':<46}{'status':<8}{'done':>6}{'failed':>7}{'req/s':>8}{'out tok/s':>11}"
    f"{'TTFT p50 ms':>13}{'TPOT p50 ms':>13}  measured on"
)


@dataclass(frozen=True)
class CampaignSummary:
    """What a campaign landed (`xcom()`: the summary task's result); `skip`: it landed no row at all."""

    campaign_id: str
    lake: str
    capacities: dict[str, float | None] = field(default_factory=dict)  # spec_id -> capacity
    runs: int = 0
    ok: int = 0
    errors: int = 0
    local_host: int = 0  # runs not measured on the instance type they name
    drifted: list[str] = field(default_factory=list)  # spec ids whose host drifted
    quality: dict[str, str] = field(default_factory=dict)  # spec_id -> the quality gate's verdict
    cost_usd: float | None = None
    unpriced_servers: int = 0
    # An A/B comparison's rows (accelbench.report.tables.ab_comparisons), as the report's files hold them.
    ab: list[dict[str, Any]] = field(default_factory=list)
    skip: str | None = None

    def xcom(self) -> dict[str, Any]:
        return {
            "capacities": self.capacities,
            "campaign_id": self.campaign_id,
            "runs": self.runs,
            "ok": self.ok,
            "errors": self.errors,
            "local_host": self.local_host,
            "drifted": self.drifted,
            "quality": self.quality,
            "cost_usd": self.cost_usd,
            "unpriced_servers": self.unpriced_servers,
            "ab": self.ab,
            "lake": self.lake,
        }


def summarize(lake: Lake, campaign: str, date: str, catalog: CatalogOpener) -> CampaignSummary:
    """Log one line per run of `campaign` (its date partition `date`), its searches, quality and costs."""
    where = (ds.field("date") == date) & (ds.field("campaign_id") == campaign)
    mine = sorted(lake.read("runs", where).to_pylist(), key=lambda r: r["run_id"])
    if not mine:
        skip = f"campaign {campaign} landed no rows in {lake.uri}: nothing new in the lake"
        return CampaignSummary(campaign, lake.uri, skip=skip)
    lines = [HEADER] + [_run_line(r) for r in mine]
    drifted = {r["spec_id"]: r["host_drift"] for r in mine if r.get("host_drift")}
    for spec_id, why in sorted(drifted.items()):
        lines.append(f"{spec_id}: {why}; its figures are reported undecided")
    searches = sorted(lake.read("capacities", where).to_pylist(), key=lambda c: c["spec_id"])
    for c in searches:
        lines.append(f"load search {c['spec_id']} on {c['instance_type']}: {capacity_text(c)}")
    quality = land_quality(lake, campaign, date, mine)  # every benchmark has landed: each meets its reference
    lines += [quality_text(q) for q in quality]
    costs = _costs(lake, campaign, date, {r["instance_type"] for r in mine}, catalog)
    spent, unpriced = total(costs)
    lines += [f"cost: {cost_text(c)}" for c in costs]
    if costs:
        lines.append(
            f"what the campaign cost: {spent:.4f} USD over {len(costs) - unpriced} priced server(s)"
            + (f"; {unpriced} unpriced" if unpriced else "")
        )
    compared = _ab(lake, mine, where)
    lines += [f"A/B {row.line}" for row in compared]
    log.info("campaign %s, lake %s:\n%s", campaign, lake.uri, "\n".join(lines))
    return CampaignSummary(
        campaign,
        lake.uri,
        capacities={c["spec_id"]: c["capacity"] for c in searches},
        runs=len(mine),
        ok=sum(r["status"] == "ok" for r in mine),
        errors=sum(r["status"] == "errors" for r in mine),
        local_host=sum(not measured_on_instance(r) for r in mine),
        drifted=sorted(drifted),
        quality={q["spec_id"]: quality_gate(q)[0] for q in quality},
        cost_usd=round(spent, 6) if costs else None,
        unpriced_servers=unpriced,
        ab=records(compared),
    )


def _ab(lake: Lake, mine: list[dict[str, Any]], where: ds.Expression) -> list[Any]:
    """An A/B campaign's comparisons (none without variants), each tested from its runs' requests."""
    ids = [r["run_id"] for r in mine if r.get("ab_comparison")]
    if not ids:
        return []
    return ab_comparisons(mine, read_samples(lake, ids, where))


def _run_line(r: dict[str, Any]) -> str:
    return (
        f"{r['run_id'].split('/', 1)[-1]:<46}{r['status']:<8}"
        f"{r['completed'] or 0:>6}{r['failed'] or 0:>7}"
        f"{r['request_throughput'] or 0:>8.2f}{r['output_throughput'] or 0:>11.1f}"
        f"{r['p50_ttft_ms'] or 0:>13.1f}{r['p50_tpot_ms'] or 0:>13.2f}  {host_label(r)}"
        + ("  (recheck)" if r.get("recheck") else "")
    )


def _costs(
    lake: Lake, campaign: str, date: str, instance_types: set[str], catalog: CatalogOpener
) -> list[dict[str, Any]]:
    """Each server's cost at the catalog's prices (accelbench.lake.costs), written to the lake."""
    with catalog() as engine:
        prices = price_history(engine, instance_types)
    return land_costs(lake, campaign, date, prices, Settings.from_env("regions").aws.regions[0])
