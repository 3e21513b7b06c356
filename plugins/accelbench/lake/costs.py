"""What a campaign cost: each server's billed seconds (its `startups` row: from its node's launch, or its
pod's scheduling on a node that was there, to its pod's deletion) at the price in force on its start for the
node's capacity type, one `costs` row per server, written by the campaign's summary.

A local server is priced only when its host is the planned instance type (a stand-in host is not that
instance's bill), at the on-demand price (the host's purchase option is not known); otherwise its row says
why it is unpriced."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow.dataset as ds

from accelbench.core.price import SECONDS_PER_HOUR, Price, price_at
from accelbench.lake.rows import costs_table
from accelbench.lake.schemas import SCHEMA_VERSION
from accelbench.lake.store import Lake, safe_name

# Karpenter's karpenter.sh/capacity-type label -> the price list's pricing model
PRICING_MODEL = {"on-demand": "on_demand", "spot": "spot"}


def cost_row(startup: dict[str, Any], prices: Sequence[Price], region: str) -> dict[str, Any]:
    """The `costs` row of one server's `startups` row."""
    model, why = _pricing_model(startup)
    instance, started, billed = startup["instance_type"], startup["started_at"], startup["billed_s"]
    price = None
    if model is not None:
        price = price_at(prices, instance, region, model, started)
        if price is None:
            why = f"no {model} price of {instance} in {region} on {started:%Y-%m-%d}"
    if billed is None:
        why = "the server's end was not recorded"
    usd = price.usd_per_hour * billed / SECONDS_PER_HOUR if price and billed is not None else None
    return {
        "schema_version": SCHEMA_VERSION,
        "campaign_id": startup["campaign_id"],
        "spec_id": startup["spec_id"],
        "dag_run_id": startup["dag_run_id"],
        "matrix_key": startup["matrix_key"],
        "instance_type": startup["instance_type"],
        "model": startup["model"],
        "vllm_version": startup["vllm_version"],
        "execution_mode": startup["execution_mode"],
        "capacity_type": startup["capacity_type"],
        "pricing_model": model,
        "region": region,
        "billed_s": startup["billed_s"],
        "usd_per_hour": price.usd_per_hour if price else None,
        "price_source": f"{price.source}, {price.effective_at:%Y-%m-%d}" if price else None,
        "usd": round(usd, 6) if usd is not None else None,
        "unpriced": None if usd is not None else why,
    }


def _pricing_model(startup: dict[str, Any]) -> tuple[str | None, str | None]:
    """(pricing model, None) or (None, why not priced)."""
    if startup["execution_mode"] == "kubernetes":
        found = PRICING_MODEL.get(startup["capacity_type"] or "")
        why = f"capacity type {startup['capacity_type']!r} has no price list (on-demand and spot have)"
        return (found, None) if found else (None, why)
    if startup["host_instance_type"] == startup["instance_type"]:
        return "on_demand", None
    host = startup["host_instance_type"] or "a host that is no EC2 instance"
    return None, f"ran on {host}, not on a {startup['instance_type']}: not that instance's bill"


def land_costs(
    lake: Lake, campaign_id: str, date: str, prices: Sequence[Price], region: str
) -> list[dict[str, Any]]:
    """The campaign's `costs` rows from its `startups` rows, written to the lake (one file per accelerator
    type, replaced on a rerun)."""
    where = (ds.field("date") == date) & (ds.field("campaign_id") == campaign_id)
    startups = lake.read("startups", where).to_pylist()
    rows: list[dict[str, Any]] = []
    by_tier: dict[str, list[dict[str, Any]]] = {}
    for startup in sorted(startups, key=lambda s: s["spec_id"]):
        row = cost_row(startup, prices, region)
        rows.append(row)
        by_tier.setdefault(startup["accelerator_type"], []).append(row)
    for tier, mine in by_tier.items():
        lake.write_table("costs", costs_table(mine), tier, date, safe_name(campaign_id))
    return rows


def total(rows: Iterable[dict[str, Any]]) -> tuple[float, int]:
    """(USD of the priced rows, how many rows are unpriced)."""
    priced = [r["usd"] for r in rows if r["usd"] is not None]
    return sum(priced), sum(1 for r in rows if r["usd"] is None)


def cost_text(row: dict[str, Any]) -> str:
    """One server's cost, as the summary logs it."""
    head = f"{row['spec_id']} on {row['instance_type']}"
    if row["usd"] is None:
        return f"{head}: {row['billed_s'] or 0:.0f} s billed, unpriced ({row['unpriced']})"
    return (
        f"{head} ({row['pricing_model']}): {row['billed_s']:.0f} s x {row['usd_per_hour']:.4f} USD/h = "
        f"{row['usd']:.4f} USD ({row['price_source']})"
    )
