"""Upsert the instance-type seed file's rows into the catalog, logging every change."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, select

from accelbench.catalog.db import session_scope
from accelbench.catalog.models import InstanceType
from accelbench.catalog.seed_file import SPEC_FIELDS, InstanceSpec

log = logging.getLogger(__name__)
SEED_SOURCE = "accelbench seed file"


def spec_of(row: InstanceType) -> InstanceSpec:
    return InstanceSpec(**{name: getattr(row, name) for name in SPEC_FIELDS})


@dataclass
class SeedResult:
    inserted: list[str]
    updated: dict[str, dict[str, tuple[object, object]]]
    unchanged: int

    def summary(self) -> str:
        return f"{len(self.inserted)} inserted, {len(self.updated)} updated, {self.unchanged} unchanged"


def upsert_instance_types(engine: Engine, specs: list[InstanceSpec], source: str = SEED_SOURCE) -> SeedResult:
    """Insert new types, update changed ones (each change logged), leave equal rows untouched."""
    now = datetime.now(UTC)
    result = SeedResult(inserted=[], updated={}, unchanged=0)
    with session_scope(engine) as session:
        existing = {r.instance_type: r for r in session.scalars(select(InstanceType))}
        for spec in specs:
            row = existing.get(spec.instance_type)
            if row is None:
                session.add(InstanceType(**asdict(spec), source=source, created_at=now, updated_at=now))
                result.inserted.append(spec.instance_type)
                continue
            old = spec_of(row)
            changes = {k: (getattr(old, k), v) for k, v in asdict(spec).items() if getattr(old, k) != v}
            if not changes:
                result.unchanged += 1
                continue
            for key, (before, after) in changes.items():
                log.info("instance type %s: %s changed %r -> %r", spec.instance_type, key, before, after)
                setattr(row, key, after)
            row.source, row.updated_at = source, now
            result.updated[spec.instance_type] = changes
    if result.inserted:
        log.info("inserted %d instance types: %s", len(result.inserted), ", ".join(result.inserted))
    log.info("instance catalog upsert: %s", result.summary())
    return result
