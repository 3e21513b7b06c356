"""The SLOs the report judges levels by: they live in `accelbench.core.slos` (the load search in
`accelbench.core.search` judges its probes by the same rule) and are re-exported here for the report's
modules and the DAG files that import them at parse time; and the best level under them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from accelbench.core.slos import DEFAULT_MAX_ERROR_RATE, LIMITS, Limit, Slos
from accelbench.report.pricing import cost_order

__all__ = ["DEFAULT_MAX_ERROR_RATE", "LIMITS", "Limit", "Slos", "best_under_slos"]


def best_under_slos(points: Iterable[dict[str, Any]], slos: Slos) -> list[dict[str, Any]]:
    """Per configuration, the highest-throughput level that meets every SLO; cheapest first."""
    best: dict[str, dict[str, Any]] = {}
    for p in points:
        if slos.misses(p):
            continue
        key = p["configuration_id"]
        if key not in best or (p["output_throughput"] or 0) > (best[key]["output_throughput"] or 0):
            best[key] = p
    return sorted(best.values(), key=cost_order)
