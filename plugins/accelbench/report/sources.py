"""What a report reads besides the lake: price history and retractions from the catalog."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine, select

from accelbench.catalog.db import session_scope
from accelbench.catalog.models import InstancePrice
from accelbench.catalog.models import Retraction as RetractionRow
from accelbench.core.price import Price
from accelbench.report.retractions import Retraction


def price_history(engine: Engine, instance_types: set[str] | None = None) -> list[Price]:
    query = select(InstancePrice)
    if instance_types:
        query = query.where(InstancePrice.instance_type.in_(sorted(instance_types)))
    with session_scope(engine) as session:
        return [
            Price(p.instance_type, p.region, p.pricing_model, p.usd_per_hour, _utc(p.effective_at), p.source)
            for p in session.scalars(query)
        ]


def _utc(when: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; the catalog stores UTC."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def retractions(engine: Engine) -> list[Retraction]:
    with session_scope(engine) as session:
        return [
            Retraction(r.run_id, r.reason, r.superseded_by) for r in session.scalars(select(RetractionRow))
        ]
