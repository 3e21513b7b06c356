"""The regression gate's run for one vLLM CPU version: record it as benchmarked, compare it with its
neighbours on every point of the version matrix (`compare`: rejected versions are no baseline), write the
report that lists the regressions, and decide what to ask the owner (`GateOutcome`).

What the caller does with the outcome (notify, fail the run, hand the question to the approval step) is
the caller's: the Airflow task `accelbench.airflow.tasks.versions.regression_gate`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow.dataset as ds

from accelbench.campaign.matrix import matrix_keys
from accelbench.campaign.plan import parse_request
from accelbench.catalog.db import CatalogOpener
from accelbench.catalog.decisions import decisions
from accelbench.catalog.queries import instance_catalog
from accelbench.core.changes import FDR, MIN_EFFECT
from accelbench.core.model_origin import model_identity
from accelbench.decisions import Decision, standing, unanswered
from accelbench.lake.schemas import LakeRow
from accelbench.lake.store import Lake
from accelbench.regression.regressions import regression_keys
from accelbench.regression.rule import (
    GateVerdict,
    MatrixPoints,
    gate,
    gate_scope,
    gated_runs,
    measured_versions,
)
from accelbench.report.build import partition_filter
from accelbench.report.retractions import Retraction
from accelbench.report.samples import Samples, read_samples
from accelbench.report.service import cross_tier_report
from accelbench.report.sources import retractions
from accelbench.runtime.discovery import mark
from accelbench.runtime.version_rules import check_version
from accelbench.tiers import CPU

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Comparison:
    """What the gate compared: the versions left out as baselines (`rejected`), the matrix's points at the
    measured versions (`planned`), the gated runs' requests (`samples`) and the verdict."""

    rejected: frozenset[str]
    planned: MatrixPoints
    samples: Samples
    verdict: GateVerdict


def compare(
    lake: Lake,
    runs: list[LakeRow],
    model: str,
    version: str,
    plan: Callable[[set[str]], MatrixPoints],
    answers: Sequence[Decision] = (),
    retracted: Sequence[Retraction] = (),
    where: ds.Expression | None = None,
) -> Comparison:
    """Gate `version` of `model` (its id, as the rows name it) over `runs` (the lake's, in `gate_scope`):
    `plan` gives the matrix's points at the versions measured; the owner's `answers` say which versions
    were rejected (no other version's baseline: the next one is compared with the last good one); each
    percentile is tested from the requests of every repeat (`where` prunes the lake's partitions)."""
    rejected = {d.version for d in answers if d.model == model and d.decision == "rejected"} - {version}
    if rejected:
        log.info("regression gate: rejected versions are not compared with: %s", ", ".join(sorted(rejected)))
    scoped = [r for r in runs if r["vllm_version"] not in rejected]
    planned = plan(measured_versions(scoped))
    gated = [r["run_id"] for r in gated_runs(scoped, planned)]
    samples = read_samples(lake, gated, where)
    verdict = gate(scoped, model, planned, list(retracted), version, samples)
    return Comparison(frozenset(rejected), planned, samples, verdict)


@dataclass(frozen=True)
class GateOutcome:
    """A gate's run: the comparison, the report's page, and what to do about the regressions: nothing
    (none), nothing new (`answer`: the owner's standing answer covers them all), or ask (`ask`: the
    regressions no answer covers; `text`: the question, for a notifier or a failure; `body`: for the
    approval step)."""

    version: str
    model: str  # as the rows name it: the model's id
    report: str  # the report's HTML page
    comparison: Comparison
    answer: str | None = None
    ask: list[str] = field(default_factory=list)
    text: str | None = None
    body: str | None = None

    @property
    def lines(self) -> list[str]:
        """Each regression in words."""
        return self.comparison.verdict.lines

    @property
    def asks(self) -> bool:
        """The owner has a question to answer: regressions that no earlier answer covers."""
        return self.text is not None

    def xcom(self) -> dict[str, Any]:
        """What the gate task returns to the approval step (`accelbench.airflow.approval`)."""
        result: dict[str, Any] = {
            "version": self.version,
            "model": self.model,
            "report": self.report,
            "ask": [],
        }
        if not self.lines:
            return result | {"regressions": []}
        result |= {"regressions": self.lines}
        if not self.asks:
            return result | {"answer": self.answer}
        return result | {"ask": self.ask, "body": self.body}


def run(
    lake: Callable[[], Lake],
    catalog: CatalogOpener,
    version: str,
    matrix: Callable[[], Mapping[str, Any]],
) -> GateOutcome:
    """Gate `version` (checked as the run's partition key) on the version matrix (`matrix`: its params,
    ACCELBENCH_VERSION_MATRIX's), also recording it as benchmarked in the catalog; log what was compared,
    write the report of the matrix's model, and log the outcome."""
    version = check_version(version, "partition_key")
    with catalog() as engine:
        mark(engine, version, "benchmarked")
    request = parse_request(matrix())
    # The rows name a model by its id (a local folder by the id its provenance gives), the gate too.
    model, tier = model_identity(request.model).model_id, CPU.name  # the vLLM CPU versions are gated
    opened, scope = lake(), gate_scope(model, tier)
    scoped = opened.read("runs", where=partition_filter(scope)).to_pylist()
    with catalog() as engine:  # the matrix's points at the versions measured: the gate compares those
        answers = decisions(engine, CPU.runtime)
        catalogued = instance_catalog(engine)
        found = compare(
            opened,
            scoped,
            model,
            version,
            lambda versions: matrix_keys(request, catalogued, versions),
            answers,
            retractions(engine),
            partition_filter(scope, rows=False),
        )
    _log_comparison(found.verdict, version)
    report = cross_tier_report({"models": [model], "tiers": [tier]}, catalog, lambda: opened).html
    outcome = GateOutcome(version, model, report, found)
    if not found.verdict.regressions:
        log.info(
            "regression gate: vLLM CPU %s has no regression beyond %.0f%% at FDR %g (%s)",
            version,
            MIN_EFFECT * 100,
            FDR,
            request.model,
        )
        return outcome
    return _decide(outcome, answers)


def _log_comparison(verdict: GateVerdict, version: str) -> None:
    for unplanned, why in sorted(verdict.unplanned.items()):
        log.info("regression gate: the matrix does not plan at %s (%s): not compared", unplanned, why)
    if verdict.undecided:  # more repeats or prompts per level would decide these
        log.info("regression gate: undecided at %s:\n%s", version, "\n".join(verdict.undecided))


def _decide(outcome: GateOutcome, answers: Sequence[Decision]) -> GateOutcome:
    """The regressions against the owner's answers: answered already, or a question to ask."""
    lines, model, version = outcome.lines, outcome.model, outcome.version
    now = standing(answers, model, version)
    keys = [k for r in outcome.comparison.verdict.regressions for k in regression_keys(r)]
    ask = unanswered(keys, answers, model, version)
    if now is not None and not ask:  # rejected, or every regression accepted as known: asked already
        log.warning(
            "regression gate: %d regression(s), answered: %s\n%s", len(lines), now.text(), "\n".join(lines)
        )
        return GateOutcome(version, model, outcome.report, outcome.comparison, answer=now.text())
    text = (
        f"vLLM CPU {version}: {len(lines)} regression(s) beyond {MIN_EFFECT:.0%} at a false discovery rate"
        f" of {FDR:g}\n" + "\n".join(lines)
    )
    log.warning("regression gate: %s\nreport: %s", text, outcome.report)
    body = "\n".join(f"- {line}" for line in lines)
    body = f"{text.splitlines()[0]}:\n\n{body}\n\nReport: {outcome.report}"
    return GateOutcome(version, model, outcome.report, outcome.comparison, ask=ask, text=text, body=body)
