"""The cross-tier comparison: like with like only.

Each configuration's best level under the SLOs stands beside the other tiers' best levels of the same
model on the same workload (model.COMPARISON_KEY: profile, endpoint, shared prefix, dataset, lengths and
their range), measured or imported, never beside another workload's. A group that more than one tier
measured is compared, cheapest first; a point whose group only one tier measured is set apart with why:
another tier measured the model on a different workload (and what differs), the other tiers' levels on
this workload miss the SLOs, or no other tier measured the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from accelbench.report.model import WORKLOAD_KEY, cost_order

DIFFERENT_WORKLOAD = "different workload"
OTHERS_MISS_SLOS = "the other tiers' levels on this workload miss the SLOs"
NO_OTHER_TIER = "no other tier measured this model"
# A point's workload fields by the names its row has them (`workload` there is the label in words).
_WORKLOAD_FIELDS = tuple(("workload_profile" if k == "workload" else k, k) for k in WORKLOAD_KEY)


def _shown(value: Any) -> str:
    if value is None:
        return "not recorded"
    return f"{value:g}" if isinstance(value, float) else str(value)


def workload_differences(p: dict[str, Any], q: dict[str, Any]) -> str:
    """ "input_len 1024 vs 64, output_len 128 vs 32": the workload fields in which point p differs from q."""
    return ", ".join(
        f"{name} {_shown(p.get(column))} vs {_shown(q.get(column))}"
        for column, name in _WORKLOAD_FIELDS
        if p.get(column) != q.get(column)
    )


def _why_apart(p: dict[str, Any], points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Why point p has no other tier beside it (`not_compared_because`) and, for a different workload, how
    the other tiers' workloads of the model differ from p's (`workload_differs`)."""
    others = [
        q for q in points if q["model"] == p["model"] and q["accelerator_type"] != p["accelerator_type"]
    ]
    if not others:
        return {"not_compared_because": NO_OTHER_TIER, "workload_differs": None}
    if any(q["comparison_id"] == p["comparison_id"] for q in others):
        return {"not_compared_because": OTHERS_MISS_SLOS, "workload_differs": None}
    workloads: dict[str, dict[str, Any]] = {}
    for q in sorted(others, key=lambda q: (q["accelerator_type"], q["workload"])):
        workloads.setdefault(f"{q['accelerator_type']} {q['comparison_id']}", q)
    differs = "; ".join(
        f"{q['accelerator_type']} {q['workload']}: {workload_differences(p, q)}" for q in workloads.values()
    )
    return {"not_compared_because": DIFFERENT_WORKLOAD, "workload_differs": differs}


def cross_tier(
    best: Sequence[dict[str, Any]], points: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(compared, not compared) from the best levels under the SLOs (`best`) and every point (`points`,
    to say why a point stands alone). Compared rows carry `tiers_compared` and come by comparison group,
    cheapest first within it; a local host's rows stay unpriced and last, labelled with that host."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in best:
        groups[p["comparison_id"]].append(p)
    compared, apart = [], []
    for members in groups.values():
        tiers = sorted({str(p["accelerator_type"]) for p in members})
        if len(tiers) > 1:
            compared += [p | {"tiers_compared": ", ".join(tiers)} for p in sorted(members, key=cost_order)]
        else:
            apart += [p | _why_apart(p, points) for p in members]
    # sorted() is stable: the compared rows keep their cost order within their group
    return sorted(compared, key=_group), sorted(apart, key=lambda p: (*_group(p), cost_order(p)))


def _group(p: dict[str, Any]) -> tuple[str, str]:
    return (p["comparison"], p["comparison_id"])
