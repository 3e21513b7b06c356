"""The regression gate's scope and verdict, as a rule the task calls: the version matrix's own points
(never other loads of its model), `version` against its neighbours on them.

The caller says which points are the matrix's: its model, and the matrix_key of every spec the matrix
plans at the versions the runs measured (`accelbench.campaign.matrix.matrix_keys`, planned with the
catalog). The report reads runs; it does not plan."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from accelbench.lake.schemas import LakeRow
from accelbench.regression.regressions import Regression, describe, regressions_in, undecided_in
from accelbench.report.build import ReportFilter, gather
from accelbench.report.retractions import Retraction
from accelbench.report.samples import Samples
from accelbench.report.tables.version_deltas import version_deltas


class MatrixPoints(Protocol):
    """The matrix's points at some versions, as its caller planned them (`MatrixKeys` in campaign)."""

    @property
    def keys(self) -> Collection[str]: ...  # the matrix_key of each spec planned at those versions

    @property
    def unplanned(self) -> Mapping[str, str]: ...  # version -> why the matrix does not plan at it


def gate_scope(model: str, tier: str = "cpu") -> ReportFilter:
    """Where the gate reads the lake: the matrix's model (as the rows name it: its id) on the tier of the
    runtime whose versions are gated (`gate` narrows it further)."""
    return ReportFilter(models=[model], tiers=[tier])


def measured_versions(runs: Iterable[LakeRow]) -> set[str]:
    """The vLLM versions `runs` measured: the caller plans the matrix at these for `gate`."""
    return {r["vllm_version"] for r in runs if r["vllm_version"]}


def gated_runs(runs: Iterable[LakeRow], matrix: MatrixPoints) -> list[LakeRow]:
    """The runs of a matrix point (its matrix_key planned at the version it measured): the gate compares
    these, so its caller reads their requests (`accelbench.report.samples.read_samples`)."""
    return [r for r in runs if r["matrix_key"] in matrix.keys]


@dataclass(frozen=True)
class GateVerdict:
    version: str
    regressions: list[Regression] = field(default_factory=list)
    unplanned: dict[str, str] = field(default_factory=dict)  # measured versions the matrix does not plan at
    undecided: list[str] = field(
        default_factory=list
    )  # what the samples could not decide, and what they resolve

    @property
    def lines(self) -> list[str]:
        return [describe(r) for r in self.regressions]


def gate(
    runs: list[LakeRow],
    model: str,
    matrix: MatrixPoints,
    retracted: list[Retraction],
    version: str,
    samples: Samples = Samples.EMPTY,
) -> GateVerdict:
    """`runs`: the lake's runs in `gate_scope(model)`; `matrix`: the matrix's points at the versions they
    measured (`measured_versions(runs)`); `samples`: the requests of the `gated_runs` (without them each
    percentile is tested from the repeats alone). Only the runs of a matrix point are compared; retracted
    runs are not. The false discovery rate is controlled across every point and metric compared."""
    inputs = gather(gated_runs(runs, matrix), [], retracted, gate_scope(model))
    deltas = version_deltas(inputs.points, inputs.runs, samples, touching=version)
    return GateVerdict(version, regressions_in(deltas), dict(matrix.unplanned), undecided_in(deltas))
