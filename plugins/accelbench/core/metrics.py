"""Client-side metrics of one level's requests, the same whether the suite's load generator measured them
or an imported result brought them: so a run and an import are judged by one rule."""

from __future__ import annotations

from typing import Any

CLIENT_LIMITED_RATIO = 0.9  # achieved / requested arrival rate below this: the client could not keep up


def peak_concurrency(starts: list[float], latencies: list[float]) -> int:
    """Most requests in flight at one instant (a sweep over send and finish times)."""
    events = sorted(
        [(s, 1) for s in starts] + [(s + lat, -1) for s, lat in zip(starts, latencies, strict=True)],
        key=lambda e: (e[0], e[1]),
    )
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def arrival_rate(result: dict[str, Any]) -> float | None:
    """Requests sent per second over the sending span (the drain tail after the last send excluded)."""
    starts: list[float] = result.get("start_times") or []
    if len(starts) >= 2 and max(starts) > min(starts):
        return (len(starts) - 1) / (max(starts) - min(starts))
    if not result.get("duration"):
        return None
    completed: float = result["completed"]
    duration: float = result["duration"]
    return completed / duration
