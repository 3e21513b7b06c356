"""On-demand Linux prices from the AWS Price List Query API, parsed from its JSON-string documents."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from accelbench.catalog.families import is_bare_metal

log = logging.getLogger(__name__)
SOURCE = "AWS Price List Query API (pricing:GetProducts)"


class PriceLookupError(Exception):
    """No single usable price for one instance type; the refresh counts it and carries on.

    `skip` is True when there is simply nothing to price (type not sold there, zero prices),
    False when the answer was wrong (conflicting prices, only malformed documents).
    """

    def __init__(self, message: str, *, skip: bool) -> None:
        super().__init__(message)
        self.skip = skip


@dataclass(frozen=True)
class Price:
    instance_type: str
    region: str
    pricing_model: str
    usd_per_hour: float
    effective_at: datetime
    source: str
    zone_prices: dict[str, float] | None = None


@dataclass
class ParseStats:
    """What happened to the documents of one lookup: counted, never silently dropped."""

    documents: int = 0
    zero_prices: int = 0
    malformed: list[str] = field(default_factory=list)


def on_demand_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """The FACTS.md filter set; bare-metal sizes are dedicated 'Compute Instance (bare metal)'."""
    metal = is_bare_metal(instance_type)
    values = {
        "serviceCode": "AmazonEC2",
        "regionCode": region,
        "instanceType": instance_type,
        "operatingSystem": "Linux",
        "tenancy": "Dedicated" if metal else "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
        "productFamily": "Compute Instance (bare metal)" if metal else "Compute Instance",
    }
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in values.items()]


def _parse_time(raw: str) -> datetime:
    ts = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def prices_in_document(doc: str) -> list[tuple[Decimal, datetime]]:
    """Every (USD/hour, effective date) of the OnDemand terms of one PriceList entry."""
    data: Any = json.loads(doc)
    out = []
    for term in data["terms"]["OnDemand"].values():
        effective = _parse_time(term["effectiveDate"])
        for dim in term["priceDimensions"].values():
            out.append((Decimal(dim["pricePerUnit"]["USD"]), effective))
    return out


def parse_price_list(instance_type: str, region: str, documents: list[str], stats: ParseStats) -> Price:
    """One price from the documents, or PriceLookupError saying why not."""
    found: dict[Decimal, datetime] = {}
    for doc in documents:
        stats.documents += 1
        try:
            entries = prices_in_document(doc)
        except (ValueError, KeyError, TypeError, AttributeError, InvalidOperation) as exc:
            stats.malformed.append(f"{type(exc).__name__}: {exc}")
            log.warning(
                "%s %s: skipped a malformed price document (%s: %s)",
                instance_type,
                region,
                type(exc).__name__,
                exc,
            )
            continue
        for usd, effective in entries:
            if usd == 0:
                stats.zero_prices += 1
                continue
            found[usd] = min(effective, found.get(usd, effective))
    if not found:
        raise PriceLookupError(
            f"{instance_type} in {region}: no non-zero on-demand Linux price "
            f"({stats.documents} documents, {stats.zero_prices} zero prices, "
            f"{len(stats.malformed)} malformed)",
            skip=not stats.malformed,
        )
    if len(found) > 1:
        listed = ", ".join(f"{p} USD/h" for p in sorted(found))
        raise PriceLookupError(
            f"{instance_type} in {region}: {len(found)} conflicting on-demand prices ({listed}); "
            "the Pricing API filter matched more than one product",
            skip=False,
        )
    ((usd, effective),) = found.items()
    return Price(instance_type, region, "on_demand", float(usd), effective, SOURCE)


def fetch_on_demand(pricing_client: Any, instance_type: str, region: str, stats: ParseStats) -> Price:
    """Query GetProducts through every page and parse the result."""
    paginator = pricing_client.get_paginator("get_products")
    documents: list[str] = []
    for page in paginator.paginate(
        ServiceCode="AmazonEC2",
        Filters=on_demand_filters(instance_type, region),
        FormatVersion="aws_v1",
    ):
        documents.extend(page.get("PriceList", []))
    return parse_price_list(instance_type, region, documents, stats)
