"""Each point's start-up: the median `ready_s` of the servers that measured it (the lake's `startups` rows
of its runs' specs), the cold-start latency the capacity planner holds against the user's limit."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any


def mark_startups(
    points: list[dict[str, Any]], startups: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """`points` with `startup_s` (None: none of its servers' start-ups is in the lake)."""
    ready: dict[str, list[float]] = {}
    for s in startups:
        if s.get("ready_s") is not None:
            ready.setdefault(s["spec_id"], []).append(s["ready_s"])
    for p in points:
        # run ids are "<campaign>/<spec>/<level>" (imports and older rows: "<spec>/<level>")
        specs = {run_id.rsplit("/", 2)[-2] for run_id in p.get("run_ids") or [] if "/" in run_id}
        found = [r for spec in sorted(specs) for r in ready.get(spec, [])]
        p["startup_s"] = statistics.median(found) if found else None
    return points
