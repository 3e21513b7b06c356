"""The regression gate: a version against the one before it, on every matrix point both measured."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from packaging.version import InvalidVersion, Version

from accelbench.report.tables.version_deltas import CV_METRICS, version_deltas


def _same(a: str | None, b: str) -> bool:
    try:
        return a is not None and Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def regressions_of(points: Iterable[dict[str, Any]], version: str) -> list[dict[str, Any]]:
    """The version deltas touching `version` with a regression beyond noise: a throughput drop, a p99
    TTFT or TPOT rise (the rule of `version_deltas`). Into `version` from the version before it, and
    from `version` into the one after it when that was measured first (versions measured out of
    order, e.g. by a backfill). One row per matrix point and pair; `regressed` names the metrics."""
    found = []
    for delta in version_deltas(points):
        if not (_same(delta["to_version"], version) or _same(delta["from_version"], version)):
            continue
        bad = [m for m in CV_METRICS if delta.get(f"{m}_verdict") == "regression"]
        if bad:
            found.append(delta | {"regressed": bad})
    return found


def describe(regression: dict[str, Any]) -> str:
    """One line a notification or a task log can carry."""
    changes = ", ".join(
        f"{m} {regression[f'{m}_change']:+.1%} (noise limit {regression[f'{m}_noise_limit']:.1%})"
        for m in regression["regressed"]
    )
    host = f" [{regression['host']}]" if regression.get("host") not in (None, "instance") else ""
    return (
        f"{regression['configuration']} {regression['model']} {regression['workload']} "
        f"{regression['level']}{host}: {regression['from_version']} -> {regression['to_version']}: {changes}"
    )
