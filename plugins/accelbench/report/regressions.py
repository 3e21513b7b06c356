"""The regression gate: a version against the one before it, on every matrix point both measured."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from accelbench.report.model import CV_METRICS, version_deltas


def regressions_of(points: Iterable[dict[str, Any]], version: str) -> list[dict[str, Any]]:
    """The version deltas into `version` with a regression beyond noise: a throughput drop, a p99
    TTFT or TPOT rise (the rule of `version_deltas`). One row per matrix point; `regressed` names the
    metrics."""
    found = []
    for delta in version_deltas(points):
        if delta["to_version"] != version:
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
    return (
        f"{regression['instance_type']} {regression['model']} {regression['level_kind']}="
        f"{regression['level_value']:g}: {regression['from_version']} -> {regression['to_version']}: "
        f"{changes}"
    )
