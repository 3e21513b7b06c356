"""The regression gate's scope and verdict, as a rule the task calls: the version matrix's own points
(never other loads of its model), `version` against its neighbours on them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from accelbench.campaign.matrix import matrix_keys
from accelbench.campaign.request import CampaignRequest
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.report.build import ReportFilter, build_report
from accelbench.report.model import Retraction
from accelbench.report.regressions import describe, regressions_of


def gate_scope(matrix: CampaignRequest) -> ReportFilter:
    """Where the gate reads the lake: the matrix's model on the CPU tier (`gate` narrows it further)."""
    return ReportFilter(models=[matrix.model], tiers=["cpu"])


@dataclass(frozen=True)
class GateVerdict:
    version: str
    regressions: list[dict[str, Any]] = field(default_factory=list)
    unplanned: dict[str, str] = field(default_factory=dict)  # measured versions the matrix does not plan at

    @property
    def lines(self) -> list[str]:
        return [describe(r) for r in self.regressions]


def gate(
    runs: list[dict[str, Any]],
    matrix: CampaignRequest,
    catalog: Mapping[str, InstanceSpec],
    retracted: list[Retraction],
    version: str,
) -> GateVerdict:
    """`runs`: the lake's runs in `gate_scope(matrix)`. Only those of a matrix point (its matrix_key
    planned at the version they measured) are compared; retracted runs are not."""
    keys = matrix_keys(matrix, catalog, {r["vllm_version"] for r in runs if r["vllm_version"]})
    mine = [r for r in runs if r["matrix_key"] in keys.keys]
    points = build_report(mine, [], retracted, gate_scope(matrix))["points"]
    return GateVerdict(version, regressions_of(points, version), keys.unplanned)
