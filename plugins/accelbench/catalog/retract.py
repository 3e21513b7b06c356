"""Withdraw runs from default reports: one catalog row per run, with why and what replaces it.

The runs stay in the lake untouched; reports read `retractions` and list those runs apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import Engine, select

from accelbench.catalog.db import session_scope
from accelbench.catalog.models import Retraction
from accelbench.errors import ConfigError


@dataclass
class RetractResult:
    added: list[str] = field(default_factory=list)
    changed: dict[str, str] = field(default_factory=dict)  # run id -> the reason it had before
    unchanged: list[str] = field(default_factory=list)


def check_run_ids(run_ids: Iterable[str], superseded_by: str | None, known: set[str]) -> list[str]:
    """The ids, de-duplicated; every one (and the superseding run) must be a run in the lake."""
    ids = list(dict.fromkeys(r.strip() for r in run_ids if r and r.strip()))
    if not ids:
        raise ConfigError("run_ids", list(run_ids), "give at least one run id")
    unknown = [r for r in ids if r not in known]
    if unknown:
        raise ConfigError("run_ids", unknown, "no such run in the lake's runs table")
    if superseded_by is not None:
        if superseded_by not in known:
            raise ConfigError("superseded_by", superseded_by, "no such run in the lake's runs table")
        if superseded_by in ids:
            raise ConfigError("superseded_by", superseded_by, "a run cannot supersede itself")
    return ids


def retract(
    engine: Engine,
    run_ids: list[str],
    reason: str,
    superseded_by: str | None = None,
    by: str | None = None,
    now: datetime | None = None,
) -> RetractResult:
    """Add or update the retractions in one transaction (all or none); same values again: unchanged."""
    reason = reason.strip()
    if not reason:
        raise ConfigError("reason", reason, "say why the runs are retracted")
    now = now or datetime.now(UTC)
    result = RetractResult()
    with session_scope(engine) as session:
        existing = {
            r.run_id: r for r in session.scalars(select(Retraction).where(Retraction.run_id.in_(run_ids)))
        }
        for run_id in run_ids:
            row = existing.get(run_id)
            if row is None:
                session.add(
                    Retraction(
                        run_id=run_id,
                        reason=reason,
                        superseded_by=superseded_by,
                        retracted_at=now,
                        retracted_by=by,
                    )
                )
                result.added.append(run_id)
            elif (row.reason, row.superseded_by) == (reason, superseded_by):
                result.unchanged.append(run_id)
            else:
                result.changed[run_id] = row.reason
                row.reason, row.superseded_by, row.retracted_at, row.retracted_by = (
                    reason,
                    superseded_by,
                    now,
                    by,
                )
    return result


def retracted_run_ids(engine: Engine) -> set[str]:
    """Every retracted run: it never counts as measured (nor in the regression gate)."""
    with session_scope(engine) as session:
        return set(session.scalars(select(Retraction.run_id)))
