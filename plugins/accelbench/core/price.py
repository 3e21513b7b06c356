"""One price type for every stage: what the Pricing API, spot history and offline snapshots produce, what
the catalog stores and what the reports apply."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

SECONDS_PER_HOUR = 3600  # prices are per hour; what is measured or billed, in seconds


@dataclass(frozen=True)
class Price:
    """An hourly USD price of one instance type in one region, from `effective_at` on."""

    instance_type: str
    region: str
    pricing_model: str  # on_demand | spot
    usd_per_hour: float
    effective_at: datetime
    source: str
    zone_prices: dict[str, float] | None = None  # spot: the median per availability zone


def price_at(
    history: Iterable[Price], instance_type: str, region: str, pricing_model: str, when: datetime
) -> Price | None:
    """The price in force at `when`: the newest one that took effect at or before it."""
    valid = [
        p
        for p in history
        if (p.instance_type, p.region, p.pricing_model) == (instance_type, region, pricing_model)
        and p.effective_at <= when
    ]
    return max(valid, key=lambda p: p.effective_at, default=None)
