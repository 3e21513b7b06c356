"""Retracted runs: left out of every other table, listed here with why (kept in the lake)."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.report.records import columns
from accelbench.report.table import Inputs, Section, Table


@dataclass(frozen=True, slots=True)
class RetractedRun:
    """A run retracted from the report, with why and the run that supersedes it, if any."""

    run_id: str | None
    instance_type: str | None
    vllm_version: str | None
    retraction_reason: str | None
    superseded_by: str | None


COLUMNS = columns(RetractedRun)


def _retracted(inputs: Inputs) -> list[RetractedRun]:
    return [RetractedRun(*(r.get(k) for k in COLUMNS)) for r in inputs.retracted]


TABLE = Table(
    name="retracted",
    row=RetractedRun,
    compute=_retracted,
    columns=COLUMNS,
    listed_as="Retracted runs",
    section=Section(
        heading="Retracted runs",
        table_id="retracted-table",
        text="<p>Left out of every table above; kept in the lake.</p>",
    ),
)
