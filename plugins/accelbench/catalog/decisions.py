"""The owners' answers to regressions (`accelbench.decisions`), one catalog row each: the approval
step writes them, the version campaign and the report read them."""

from __future__ import annotations

from datetime import UTC

from sqlalchemy import Engine, select

from accelbench.catalog.db import session_scope
from accelbench.catalog.models import RegressionDecision
from accelbench.decisions import Decision


def record(engine: Engine, decision: Decision) -> None:
    with session_scope(engine) as session:
        session.add(
            RegressionDecision(
                runtime=decision.runtime,
                version=decision.version,
                model=decision.model,
                decision=decision.decision,
                reason=decision.reason,
                regressions=list(decision.regressions),
                decided_by=decision.decided_by,
                decided_at=decision.decided_at,
                dag_run_id=decision.dag_run_id,
            )
        )


def decisions(engine: Engine, runtime: str | None = None) -> list[Decision]:
    """Every recorded answer (of `runtime`), oldest first."""
    query = select(RegressionDecision).order_by(RegressionDecision.decided_at, RegressionDecision.id)
    if runtime is not None:
        query = query.where(RegressionDecision.runtime == runtime)
    with session_scope(engine) as session:
        return [
            Decision(
                r.runtime,
                r.version,
                r.model,
                "accepted" if r.decision == "accepted" else "rejected",
                r.reason,
                tuple(r.regressions),
                r.decided_by,
                r.decided_at if r.decided_at.tzinfo else r.decided_at.replace(tzinfo=UTC),
                r.dag_run_id,
            )
            for r in session.scalars(query)
        ]
