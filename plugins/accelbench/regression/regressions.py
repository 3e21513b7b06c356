"""The regression gate: a version against the one before it, on every matrix point both measured."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from accelbench.core.changes import FDR
from accelbench.report.model import INLINE, Point
from accelbench.report.samples import Samples
from accelbench.report.tables.version_deltas import CV_METRICS, VersionDelta, version_deltas


@dataclass(frozen=True, slots=True)
class Regression:
    """A version delta with a regression: `regressed` names its metrics."""

    delta: VersionDelta = field(metadata=INLINE)
    regressed: tuple[str, ...] = ()


def regressions_of(
    points: Iterable[Point],
    version: str,
    runs: Iterable[Mapping[str, Any]] = (),
    samples: Samples = Samples.EMPTY,
    fdr: float = FDR,
) -> list[Regression]:
    """The version deltas touching `version` with a regression: a throughput drop, a p99 TTFT or TPOT
    rise beyond the minimum effect, with the false discovery rate at `fdr` across every point and metric
    of these deltas (the rule of `version_deltas`; `runs` and `samples`: the points' repeats and their
    requests). Into `version` from the version before it, and from `version` into the one after it when
    that was measured first (versions measured out of order, e.g. by a backfill). One row per matrix
    point and pair; `regressed` names the metrics."""
    return regressions_in(version_deltas(points, runs, samples, touching=version, fdr=fdr))


def regressions_in(deltas: Iterable[VersionDelta]) -> list[Regression]:
    """The deltas with a regression, each with `regressed`: the metrics."""
    found = []
    for delta in deltas:
        bad = tuple(m for m in CV_METRICS if delta.change(m).verdict == "regression")
        if bad:
            found.append(Regression(delta, bad))
    return found


def undecided_in(deltas: Iterable[VersionDelta]) -> list[str]:
    """One line per delta with a metric the samples could not decide, saying what they resolve: what more
    repeats or prompts would settle."""
    return [
        f"{_where(d)}: "
        + "; ".join(str(d.change(m).finding) for m in CV_METRICS if d.change(m).verdict == "undecided")
        for d in deltas
        if any(d.change(m).verdict == "undecided" for m in CV_METRICS)
    ]


def _where(delta: VersionDelta) -> str:
    host = f" [{delta.host}]" if delta.host not in (None, "instance") else ""
    return (
        f"{delta.configuration} {delta.model} {delta.workload} "
        f"{delta.level}{host}: {delta.from_version} -> {delta.to_version}"
    )


def describe(regression: Regression) -> str:
    """One line a notification or a task log can carry, e.g. "... 0.19.0 -> 0.20.0: p99 TTFT +12% [+6%,
    +18%], q = 0.003: regression"."""
    delta = regression.delta
    return f"{_where(delta)}: " + "; ".join(str(delta.change(m).finding) for m in regression.regressed)


def regression_keys(regression: Regression) -> list[str]:
    """What an owner's acceptance names (`accelbench.decisions`): the point, the two versions compared
    and each regressed metric, without the figures, which move from run to run."""
    return [f"{_where(regression.delta)}: {metric}" for metric in regression.regressed]
