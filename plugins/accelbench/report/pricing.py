"""What a point costs: the price in force when it was measured, and USD per 1M tokens at its throughput."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from accelbench.core.price import SECONDS_PER_HOUR, Price, price_at

PRICING_MODELS = ("on_demand", "spot")


def cost_per_million(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """USD per 1M tokens for a server that produces `tokens_per_s` for as long as it is paid for."""
    if usd_per_hour is None or not tokens_per_s:
        return None
    return usd_per_hour / SECONDS_PER_HOUR / tokens_per_s * 1_000_000


def price_columns(
    point: dict[str, Any], prices: Sequence[Price], region: str, when: datetime
) -> dict[str, Any]:
    """A point's price columns, on-demand and spot: USD per hour and where that price came from, and USD
    per 1M output and total tokens at the point's throughput; all None unless it was measured on its
    instance type (a stand-in host's throughput is not the instance type's)."""
    columns: dict[str, Any] = {}
    for model in PRICING_MODELS:
        price = (
            price_at(prices, point["instance_type"], region, model, when)
            if point["measured_on_instance"]
            else None
        )
        usd_per_hour = price.usd_per_hour if price else None
        columns[f"{model}_usd_per_hour"] = usd_per_hour
        columns[f"{model}_price_source"] = f"{price.source}, {price.effective_at:%Y-%m-%d}" if price else None
        columns[f"{model}_usd_per_1m_output_tokens"] = cost_per_million(
            usd_per_hour, point["output_throughput"]
        )
        columns[f"{model}_usd_per_1m_total_tokens"] = cost_per_million(
            usd_per_hour, point["total_token_throughput"]
        )
    return columns


def cost_order(p: dict[str, Any]) -> tuple[Any, ...]:
    """Cheapest first by on-demand, then spot, per 1M output tokens; unpriced last, then by name."""
    inf = float("inf")
    od, spot = p.get("on_demand_usd_per_1m_output_tokens"), p.get("spot_usd_per_1m_output_tokens")
    return (
        od if od is not None else inf,
        spot if spot is not None else inf,
        p["configuration"],
        p["workload"],
    )
