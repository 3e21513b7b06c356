"""The SLOs a load level must hold to count, and how each is judged: one rule for the report's tables,
the capacity planner (whose page gets LIMITS to run the same rule in JavaScript) and the load search
(`accelbench.search`, which judges each probe's repeats by it).

Standard library only: DAG files import the default from here at parse time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_ERROR_RATE = 0.01  # a level with more failed requests than this does not meet the SLOs
SAMPLE_WARNING_REQUESTS = 1000  # below this per repeat, a p99 rests on fewer than 10 requests beyond it


@dataclass(frozen=True)
class Limit:
    """One limit of the form: a parameter of plan_capacity and the point field it bounds. The page gets
    these too, so its JavaScript reads field names from here instead of repeating them."""

    param: str
    field: str
    label: str
    input: str  # the id of the form's input
    unit: str  # as the form shows it: "%" means the form's number is divided by 100
    missing_fails: bool  # whether a level without the metric fails the limit

    def fails(self, bound: float | None, p: Mapping[str, Any]) -> bool:
        """Whether point `p` breaks this limit at `bound` (None: no limit)."""
        value = p.get(self.field)
        return bound is not None and (self.missing_fails if value is None else value > bound)


# How a level is judged (Slos.misses, and the capacity planner's page): an unmeasured latency fails
# its limit, an unrecorded error rate is not counted against the level.
LIMITS = (
    Limit("ttft_p99_ms", "p99_ttft_ms", "p99 TTFT", "planner-ttft", "ms", True),
    Limit("tpot_p99_ms", "p99_tpot_ms", "p99 TPOT", "planner-tpot", "ms", True),
    Limit("e2el_p99_ms", "p99_e2el_ms", "p99 E2E latency", "planner-e2el", "ms", True),
    Limit("max_error_rate", "error_rate", "error rate", "planner-errors", "%", False),
)


@dataclass(frozen=True)
class Slos:
    """The limits a level must hold to count: p99 latencies in ms (None: no limit) and an error rate."""

    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None
    e2el_p99_ms: float | None = None
    max_error_rate: float | None = DEFAULT_MAX_ERROR_RATE

    def misses(self, p: Mapping[str, Any]) -> list[str]:
        """What `p` fails, in words ("p99 TTFT 2500 ms > 2000 ms"); empty when it meets every SLO."""
        out = []
        for limit in LIMITS:
            bound, value = getattr(self, limit.param), p.get(limit.field)
            if not limit.fails(bound, p):
                continue
            if limit.unit == "%":
                out.append(f"{limit.label} {value:.2%} > {bound:.2%}")
            else:
                shown = "not measured" if value is None else f"{value:.0f} {limit.unit}"
                out.append(f"{limit.label} {shown} > {bound:g} {limit.unit}")
        return out

    def shown(self) -> list[tuple[str, str, str]]:
        """The limits set, as a page names them: ("p99 TTFT", "2000", " ms"), ("error rate", "1%", "")."""
        found = []
        for limit in LIMITS:
            bound = getattr(self, limit.param)
            if bound is None:
                continue
            if limit.unit == "%":
                found.append((limit.label, f"{bound:.0%}" if bound >= 0.01 else f"{bound:.2%}", ""))
            else:
                found.append((limit.label, f"{bound:g}", f" {limit.unit}"))
        return found
