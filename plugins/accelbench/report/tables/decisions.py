"""The owners' answers to the regressions the gate found (the version campaign's approval step,
`accelbench.decisions`): a version's regressions accepted as known, with why, or the version rejected."""

from __future__ import annotations

from accelbench.decisions import Decision
from accelbench.report.table import Inputs, Section, Table

COLUMNS = ("runtime", "version", "model", "decision", "reason", "decided_by", "decided_at", "regressions")


def _decisions(inputs: Inputs) -> list[Decision]:
    """Newest first: the first row of a version is the answer that stands."""
    return sorted(inputs.decisions, key=lambda d: d.decided_at, reverse=True)


TABLE = Table(
    name="regression_decisions",
    row=Decision,
    compute=_decisions,
    columns=COLUMNS,
    listed_as="Regression decisions",
    section=Section(
        heading="Regression decisions",
        anchor="regression-decisions",
        table_id="regression-decisions-table",
        text="<p>What an owner answered when the version campaign's gate found regressions: accepted as "
        "known (the regressions named are not asked about again) or the version rejected (not measured "
        "again unless forced, and no other version's baseline). The newest answer of a version stands.</p>",
    ),
)
