"""The owner's answer to a regression gate's question, as the approval step gives it, recorded in the
catalog (`accelbench.catalog.decisions`): it stands for the version's next gate and campaigns."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from accelbench.catalog.db import CatalogOpener
from accelbench.catalog.decisions import record
from accelbench.decisions import Decision, answer
from accelbench.tiers import CPU

log = logging.getLogger(__name__)


def decision_of(
    gate: Mapping[str, Any], response: Mapping[str, Any], dag_run_id: str, now: datetime | None = None
) -> Decision:
    """The approval step's `response` to the gate's result `gate` (its version, model and `ask`) as a
    Decision of the owner who answered, at `now` (None: the clock's)."""
    kind, reason = answer(
        response.get("chosen_options") or [], (response.get("params_input") or {}).get("reason")
    )
    user = response.get("responded_by_user") or {}
    return Decision(
        CPU.runtime,
        gate["version"],
        gate["model"],
        kind,
        reason,
        tuple(gate["ask"]),
        user.get("name") or user.get("id"),
        now or datetime.now(UTC),
        dag_run_id,
    )


def record_answer(
    catalog: CatalogOpener, gate: Mapping[str, Any], response: Mapping[str, Any], dag_run_id: str
) -> Decision:
    """`decision_of` the response, recorded in the catalog and logged."""
    decision = decision_of(gate, response, dag_run_id)
    with catalog() as engine:
        record(engine, decision)
    log.info("recorded in the catalog: %s (%d regression(s))", decision.text(), len(decision.regressions))
    return decision
