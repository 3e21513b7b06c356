"""Spot prices from EC2 DescribeSpotPriceHistory: newest price per AZ, stored as a daily median."""

from __future__ import annotations

import statistics
from datetime import datetime
from typing import Any

from accelbench.aws.pricing import PriceLookupError
from accelbench.core.price import Price

SOURCE = "EC2 DescribeSpotPriceHistory (median of the newest price per availability zone)"
PRODUCT_DESCRIPTIONS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]


def newest_per_zone(records: list[dict[str, Any]]) -> dict[str, tuple[float, datetime]]:
    newest: dict[str, tuple[float, datetime]] = {}
    for rec in records:
        zone, ts, usd = rec["AvailabilityZone"], rec["Timestamp"], float(rec["SpotPrice"])
        if usd > 0 and (zone not in newest or ts > newest[zone][1]):
            newest[zone] = (usd, ts)
    return newest


def fetch_spot(ec2_client: Any, instance_type: str, region: str, day: datetime) -> Price:
    """The spot price of one type for the day `day` (UTC midnight): one row per type, region, day."""
    paginator = ec2_client.get_paginator("describe_spot_price_history")
    records: list[dict[str, Any]] = []
    for page in paginator.paginate(
        InstanceTypes=[instance_type],
        ProductDescriptions=PRODUCT_DESCRIPTIONS,
        StartTime=day,
    ):
        records.extend(page.get("SpotPriceHistory", []))
    zones = newest_per_zone(records)
    if not zones:
        raise PriceLookupError(
            f"{instance_type} in {region}: no spot price in any availability zone", skip=True
        )
    zone_prices = {zone: usd for zone, (usd, _) in sorted(zones.items())}
    median = statistics.median(zone_prices.values())
    return Price(instance_type, region, "spot", median, day, SOURCE, zone_prices)
