"""Each point's start-up: the median `ready_s` of the servers that measured it (the lake's `startups` rows
of its runs' specs), the cold-start latency the capacity planner holds against the user's limit."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping


def ready_by_spec(
    startups: Iterable[Mapping[str, object]], runs: Iterable[Mapping[str, object]] = ()
) -> dict[str, list[float]]:
    """Spec id -> the `ready_s` of its servers' start-ups (the lake's `startups` rows; a start-up that never
    got ready is left out). A workload that ran on a server with its configuration's other workloads
    (`runs.server_group`) has that server's start-up, which the row of the group's first workload carries."""
    ready: dict[str, list[float]] = {}
    by_group: dict[str, list[float]] = {}
    for s in startups:
        value = s.get("ready_s")
        if isinstance(value, int | float):
            ready.setdefault(str(s["spec_id"]), []).append(float(value))
            if s.get("server_group"):
                by_group.setdefault(str(s["server_group"]), []).append(float(value))
    for r in runs:
        group, spec = r.get("server_group"), str(r.get("spec_id"))
        if group and spec not in ready and str(group) in by_group:
            ready[spec] = by_group[str(group)]
    return ready


def median_startup(run_ids: Iterable[str], ready: Mapping[str, list[float]]) -> float | None:
    """The median start-up of the servers that measured a point of these runs (None: none of their
    start-ups is in the lake)."""
    # run ids are "<campaign>/<spec>/<level>" (imports and older rows: "<spec>/<level>")
    specs = {run_id.rsplit("/", 2)[-2] for run_id in run_ids if "/" in run_id}
    found = [r for spec in sorted(specs) for r in ready.get(spec, [])]
    return statistics.median(found) if found else None
