"""Retracted runs: left out of every other table, listed here with why (kept in the lake)."""

from __future__ import annotations

from typing import Any

from accelbench.report.table import Inputs, Section, Table

COLUMNS = ("run_id", "instance_type", "vllm_version", "retraction_reason", "superseded_by")


def _retracted(inputs: Inputs) -> list[dict[str, Any]]:
    return [{k: r.get(k) for k in COLUMNS} for r in inputs.retracted]


TABLE = Table(
    name="retracted",
    compute=_retracted,
    columns=COLUMNS,
    listed_as="Retracted runs",
    section=Section(
        heading="Retracted runs",
        table_id="retracted-table",
        text="<p>Left out of every table above; kept in the lake.</p>",
    ),
)
