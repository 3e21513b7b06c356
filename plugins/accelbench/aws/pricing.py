"""On-demand Linux prices from the AWS Price List Query API, parsed from its JSON-string documents."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from accelbench.core.families import is_bare_metal
from accelbench.core.price import Price

log = logging.getLogger(__name__)
SOURCE = "AWS Price List Query API (pricing:GetProducts)"
HOURLY_UNIT = "Hrs"  # the unit of an instance-hour price; upfront fees and the like are "Quantity"
MALFORMED_SHOWN = 3  # distinct malformed reasons quoted in a failure message


class PriceLookupError(Exception):
    """No single usable price for one instance type; the refresh counts it and carries on.

    `skip` is True when there is simply nothing to price (type not sold there, zero prices),
    False when the answer was wrong (bad or conflicting prices, only non-hourly or malformed documents).
    """

    def __init__(self, message: str, *, skip: bool) -> None:
        super().__init__(message)
        self.skip = skip


class MalformedDocument(ValueError):
    """A PriceList entry lacking what a price needs; the message names what is missing, and where."""


class BadPrice(ValueError):
    """An hourly USD value that is no price (negative, not a number): refused, never guessed around."""

    def __init__(self, raw: object, reason: str, rate: str) -> None:
        super().__init__(f"USD {raw!r} per {HOURLY_UNIT} is {reason} (rate {rate})")


@dataclass
class ParseStats:
    """What happened to the documents of one lookup: counted, never silently dropped."""

    documents: int = 0
    zero_prices: int = 0
    non_hourly: list[str] = field(default_factory=list)  # the unit of each skipped dimension
    malformed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DocumentPrices:
    """One document's hourly (USD, effective date) prices, and the units of the dimensions that are not."""

    hourly: list[tuple[Decimal, datetime]]
    other_units: list[str]


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


def _get(obj: Any, key: str, where: str) -> Any:
    """obj[key], or MalformedDocument naming the missing key instead of a bare KeyError."""
    if not isinstance(obj, dict):
        raise MalformedDocument(f"{where} is not a JSON object")
    if key not in obj:
        raise MalformedDocument(f"no {key} in {where}")
    return obj[key]


def _entries(obj: Any, key: str, where: str) -> list[tuple[str, Any]]:
    """The members of obj[key]: a term or dimension map that is empty cannot hold a price."""
    value = _get(obj, key, where)
    if not isinstance(value, dict) or not value:
        raise MalformedDocument(f"{key} in {where} is empty or not a JSON object")
    return list(value.items())


def _parse_time(raw: object, where: str) -> datetime:
    try:
        ts = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise MalformedDocument(f"effectiveDate {raw!r} in {where} is not an ISO date") from None
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _usd_per_hour(raw: object, rate: str) -> Decimal:
    """The value as a Decimal; Decimal() also takes 'NaN' and 'Infinity', hence is_finite()."""
    if not isinstance(raw, str):
        raise BadPrice(raw, "not a decimal string", rate)
    try:
        usd = Decimal(raw)
    except InvalidOperation:
        raise BadPrice(raw, "not a number", rate) from None
    if not usd.is_finite():
        raise BadPrice(raw, "not a finite number", rate)
    if usd < 0:
        raise BadPrice(raw, "negative", rate)
    return usd


def prices_in_document(doc: str) -> DocumentPrices:
    """The OnDemand dimensions of one PriceList entry: only `Hrs` ones are instance-hour prices."""
    try:
        data: Any = json.loads(doc)
    except (ValueError, TypeError) as exc:
        raise MalformedDocument(f"not JSON ({exc})") from None
    hourly: list[tuple[Decimal, datetime]] = []
    other_units: list[str] = []
    for code, term in _entries(_get(data, "terms", "document"), "OnDemand", "terms"):
        where = f"term {code}"
        effective = _parse_time(_get(term, "effectiveDate", where), where)
        for rate, dim in _entries(term, "priceDimensions", where):
            unit = _get(dim, "unit", f"rate {rate}")
            if unit != HOURLY_UNIT:
                other_units.append(str(unit))
                continue
            per_unit = _get(dim, "pricePerUnit", f"rate {rate}")
            if not isinstance(per_unit, dict) or "USD" not in per_unit:
                held = ", ".join(per_unit) if isinstance(per_unit, dict) else type(per_unit).__name__
                raise MalformedDocument(
                    f"no USD price in rate {rate} (pricePerUnit holds {held or 'nothing'})"
                )
            hourly.append((_usd_per_hour(per_unit["USD"], rate), effective))
    return DocumentPrices(hourly, other_units)


def _no_price(instance_type: str, region: str, stats: ParseStats) -> PriceLookupError:
    """Nothing to price is a skip; an answer of only non-hourly or malformed documents is a failure."""
    message = (
        f"{instance_type} in {region}: no non-zero on-demand Linux price "
        f"({stats.documents} documents, {stats.zero_prices} zero prices, "
        f"{len(stats.non_hourly)} non-hourly dimensions, {len(stats.malformed)} malformed)"
    )
    if stats.non_hourly:
        units = ", ".join(sorted(set(stats.non_hourly)))
        message += (
            f"; no hourly ({HOURLY_UNIT}) price dimension with a non-zero price (skipped units: {units})"
        )
    if stats.malformed:
        reasons = list(dict.fromkeys(stats.malformed))
        more = f"; and {len(reasons) - MALFORMED_SHOWN} more" if len(reasons) > MALFORMED_SHOWN else ""
        message += "; malformed: " + "; ".join(reasons[:MALFORMED_SHOWN]) + more
    return PriceLookupError(message, skip=not (stats.non_hourly or stats.malformed))


def parse_price_list(instance_type: str, region: str, documents: list[str], stats: ParseStats) -> Price:
    """One price from the documents, or PriceLookupError saying why not."""
    found: dict[Decimal, datetime] = {}
    for doc in documents:
        stats.documents += 1
        try:
            prices = prices_in_document(doc)
        except MalformedDocument as exc:
            stats.malformed.append(str(exc))
            log.warning("%s %s: skipped a malformed price document (%s)", instance_type, region, exc)
            continue
        except BadPrice as exc:
            raise PriceLookupError(
                f"{instance_type} in {region}: refused the on-demand price: {exc}", skip=False
            ) from exc
        if prices.other_units:
            stats.non_hourly.extend(prices.other_units)
            log.warning(
                "%s %s: skipped %d price dimensions not per %s (%s)",
                instance_type,
                region,
                len(prices.other_units),
                HOURLY_UNIT,
                ", ".join(prices.other_units),
            )
        for usd, effective in prices.hourly:
            if usd == 0:
                stats.zero_prices += 1
                continue
            found[usd] = min(effective, found.get(usd, effective))
    if not found:
        raise _no_price(instance_type, region, stats)
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
