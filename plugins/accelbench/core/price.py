"""One price type for every stage: what the Pricing API, spot history and offline snapshots produce, what
the catalog stores and what the reports apply."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


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
