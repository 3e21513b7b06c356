"""The regression gate: a version against the one before it, on every matrix point both measured."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from accelbench.core.changes import FDR
from accelbench.report.samples import Samples
from accelbench.report.tables.version_deltas import CV_METRICS, version_deltas


def regressions_of(
    points: Iterable[dict[str, Any]],
    version: str,
    runs: Iterable[Mapping[str, Any]] = (),
    samples: Samples = Samples.EMPTY,
    fdr: float = FDR,
) -> list[dict[str, Any]]:
    """The version deltas touching `version` with a regression: a throughput drop, a p99 TTFT or TPOT
    rise beyond the minimum effect, with the false discovery rate at `fdr` across every point and metric
    of these deltas (the rule of `version_deltas`; `runs` and `samples`: the points' repeats and their
    requests). Into `version` from the version before it, and from `version` into the one after it when
    that was measured first (versions measured out of order, e.g. by a backfill). One row per matrix
    point and pair; `regressed` names the metrics."""
    return regressions_in(version_deltas(points, runs, samples, touching=version, fdr=fdr))


def regressions_in(deltas: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The deltas with a regression, each with `regressed`: the metrics."""
    found = []
    for delta in deltas:
        bad = [m for m in CV_METRICS if delta.get(f"{m}_verdict") == "regression"]
        if bad:
            found.append(delta | {"regressed": bad})
    return found


def undecided_in(deltas: Iterable[dict[str, Any]]) -> list[str]:
    """One line per delta with a metric the samples could not decide, saying what they resolve: what more
    repeats or prompts would settle."""
    return [
        f"{_where(d)}: "
        + "; ".join(d[f"{m}_finding"] for m in CV_METRICS if d.get(f"{m}_verdict") == "undecided")
        for d in deltas
        if any(d.get(f"{m}_verdict") == "undecided" for m in CV_METRICS)
    ]


def _where(delta: dict[str, Any]) -> str:
    host = f" [{delta['host']}]" if delta.get("host") not in (None, "instance") else ""
    return (
        f"{delta['configuration']} {delta['model']} {delta['workload']} "
        f"{delta['level']}{host}: {delta['from_version']} -> {delta['to_version']}"
    )


def describe(regression: dict[str, Any]) -> str:
    """One line a notification or a task log can carry, e.g. "... 0.19.0 -> 0.20.0: p99 TTFT +12% [+6%,
    +18%], q = 0.003: regression"."""
    return f"{_where(regression)}: " + "; ".join(regression[f"{m}_finding"] for m in regression["regressed"])


def regression_keys(regression: dict[str, Any]) -> list[str]:
    """What an owner's acceptance names (`accelbench.decisions`): the point, the two versions compared
    and each regressed metric, without the figures, which move from run to run."""
    return [f"{_where(regression)}: {metric}" for metric in regression["regressed"]]
