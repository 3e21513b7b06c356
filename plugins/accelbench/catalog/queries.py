"""Read and write helpers over the catalog tables that several tasks share."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Engine, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from accelbench.catalog.db import session_scope
from accelbench.catalog.models import InstancePrice, InstanceType, RuntimeVersion
from accelbench.catalog.seed import spec_of
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.core.price import Price
from accelbench.errors import UnknownInstanceType


def runtime_image(engine: Engine, runtime: str, version: str) -> tuple[str | None, str | None]:
    """(image, digest) that release discovery recorded for a runtime version; (None, None) if it is unknown.
    The Neuron DLC's image cannot be derived from the version (its tag names the Neuron SDK)."""
    with session_scope(engine) as session:
        row = session.execute(
            select(RuntimeVersion.image, RuntimeVersion.digest).where(
                RuntimeVersion.runtime == runtime, RuntimeVersion.version == version
            )
        ).one_or_none()
    return (row.image, row.digest) if row is not None else (None, None)


def instance_specs(engine: Engine, names: Iterable[str] | None = None) -> list[InstanceSpec]:
    """Catalog rows as specs; every requested name must exist, or the first unknown one is named."""
    with session_scope(engine) as session:
        rows = {r.instance_type: spec_of(r) for r in session.scalars(select(InstanceType))}
    if names is None:
        return [rows[k] for k in sorted(rows)]
    wanted = list(dict.fromkeys(names))
    for name in wanted:
        if name not in rows:
            raise UnknownInstanceType(name, field="instance_types")
    return [rows[n] for n in wanted]


def instance_catalog(engine: Engine) -> dict[str, InstanceSpec]:
    """Every catalog row by instance type: what the planner checks a request against."""
    return {s.instance_type: s for s in instance_specs(engine)}


def store_prices(engine: Engine, prices: list[Price], fetched_at: datetime) -> int:
    """Insert price history rows; a row already stored for the same key is left alone."""
    if not prices:
        return 0
    values = [
        {
            "instance_type": p.instance_type,
            "region": p.region,
            "pricing_model": p.pricing_model,
            "usd_per_hour": p.usd_per_hour,
            "effective_at": p.effective_at,
            "fetched_at": fetched_at,
            "source": p.source,
            "zone_prices": p.zone_prices,
        }
        for p in prices
    ]
    insert = pg_insert if engine.dialect.name == "postgresql" else sqlite_insert
    stmt = insert(InstancePrice).on_conflict_do_nothing(
        index_elements=["instance_type", "region", "pricing_model", "effective_at"]
    )
    # RETURNING yields only the rows this statement inserted (a conflict returns nothing), which
    # stays right when another writer inserts at the same time, unlike counting the table twice.
    with session_scope(engine) as session:
        return len(session.execute(stmt.returning(InstancePrice.id), values).all())


def latest_prices(engine: Engine) -> list[InstancePrice]:
    """The newest row per (type, region, pricing model)."""
    newest = (
        select(
            InstancePrice.instance_type,
            InstancePrice.region,
            InstancePrice.pricing_model,
            func.max(InstancePrice.effective_at).label("at"),
        )
        .group_by(InstancePrice.instance_type, InstancePrice.region, InstancePrice.pricing_model)
        .subquery()
    )
    stmt = (
        select(InstancePrice)
        .join(
            newest,
            (InstancePrice.instance_type == newest.c.instance_type)
            & (InstancePrice.region == newest.c.region)
            & (InstancePrice.pricing_model == newest.c.pricing_model)
            & (InstancePrice.effective_at == newest.c.at),
        )
        .order_by(InstancePrice.instance_type, InstancePrice.region, InstancePrice.pricing_model)
    )
    with session_scope(engine) as session:
        return list(session.scalars(stmt))
