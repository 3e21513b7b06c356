"""A `capacities` row in words, as a campaign's task logs say it."""

from __future__ import annotations

from typing import Any

from accelbench.core.search_plan import UNITS, bound_text, capacity_words, says_high_undecided
from accelbench.report.labels import bracket_text


def capacity_text(c: dict[str, Any]) -> str:
    """A `capacities` row in words: the outcome, the capacity and its bracket, what limited it, the cost."""
    unit, bracket = UNITS[c["variable"]], bracket_text(c["bracket_passing"], c["bracket_failing"]) or "[, ]"
    cost = f"{c['probes']} probes, {c['server_s'] or 0:.0f} server-s"
    why = f": {c['stopped_why']}" if c.get("stopped_why") else ""
    if c["capacity"] is None:
        where = f" at {c['stopped_at']:g} {unit}" if c.get("stopped_at") is not None else ""
        interval = ""
        if c["outcome"] == "below_lower" and c.get("capacity_method") is not None:  # lower bound undecided
            high = c.get("capacity_high")
            undecided = " undecided" if says_high_undecided(c.get("capacity_method"), high) else ""
            interval = f"; 95% interval [{bound_text(c.get('capacity_low'))}, {bound_text(high)}{undecided}]"
        return f"no capacity ({c['outcome']}{where}{why}{interval}; bracket {bracket}; {cost})"
    limited = f", limited by {c['limiting_metric']}" if c.get("limiting_metric") else ""
    value = capacity_words(
        c["capacity"],
        unit,
        c.get("capacity_low"),
        c.get("capacity_high"),
        interval=c.get("capacity_method") is not None,
        high_undecided=says_high_undecided(c.get("capacity_method"), c.get("capacity_high")),
    )
    return f"capacity {value} (bracket {bracket}{limited}{why}; {cost})"
