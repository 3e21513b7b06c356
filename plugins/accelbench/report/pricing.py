"""What a point costs: the price in force when it was measured, and USD per 1M tokens at its throughput."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from accelbench.core.price import SECONDS_PER_HOUR

if TYPE_CHECKING:
    from accelbench.report.model import Point

PRICING_MODELS = ("on_demand", "spot")


def cost_per_million(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """USD per 1M tokens for a server that produces `tokens_per_s` for as long as it is paid for."""
    if usd_per_hour is None or not tokens_per_s:
        return None
    return usd_per_hour / SECONDS_PER_HOUR / tokens_per_s * 1_000_000


def cost_order(p: Point) -> tuple[Any, ...]:
    """Cheapest first by on-demand, then spot, per 1M output tokens; unpriced last, then by name."""
    return order_by_cost(
        p.on_demand.usd_per_1m_output_tokens.estimate,
        p.spot.usd_per_1m_output_tokens.estimate,
        p.configuration,
        p.workload,
    )


def order_by_cost(on_demand: float | None, spot: float | None, *names: str) -> tuple[Any, ...]:
    """The order of `cost_order` from the figures themselves (the plots' rows are the files')."""
    inf = float("inf")
    return (on_demand if on_demand is not None else inf, spot if spot is not None else inf, *names)
