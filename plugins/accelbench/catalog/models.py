"""SQLAlchemy 2 models of the catalog; the constraints live in the schema, not only in Python."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from accelbench.core.families import ARCHITECTURES

PRICING_MODELS = ("on_demand", "spot")
RUNTIME_STATUSES = ("discovered", "announced", "benchmarked", "failed", "skipped")
DECISIONS = (
    "accepted",
    "rejected",
)  # an owner's answer to a version's regressions (accelbench.decisions)

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


ACCELERATORS_ALL_OR_NONE = (
    "(accelerator_count = 0 AND accelerator_memory_gib = 0)"
    " OR (accelerator_count > 0 AND accelerator_memory_gib > 0)"
)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class InstanceType(Base):
    """One EC2 instance type the suite can benchmark or compare against."""

    __tablename__ = "instance_types"
    __table_args__ = (
        CheckConstraint(_in("architecture", ARCHITECTURES), name="architecture"),
        CheckConstraint("accelerator_count >= 0", name="accelerator_count_nonneg"),
        CheckConstraint("accelerator_memory_gib >= 0", name="accelerator_memory_nonneg"),
        # Tier-free (the catalog sits below the tier registry): a type has accelerators with their memory, or
        # neither. Which tiers are accelerated is the registry's rule, checked when the seed file is read
        # (accelbench.tiers: Tier.seed_problem).
        CheckConstraint(ACCELERATORS_ALL_OR_NONE, name="accelerator_all_or_none"),
        CheckConstraint("vcpu > 0", name="vcpu_positive"),
        CheckConstraint("memory_gib > 0", name="memory_positive"),
        CheckConstraint("numa_nodes >= 1", name="numa_nodes_positive"),
        CheckConstraint("max_pods IS NULL OR max_pods >= 1", name="max_pods_positive"),
    )

    instance_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    family: Mapped[str] = mapped_column(String(32))
    size: Mapped[str] = mapped_column(String(32))
    generation: Mapped[str] = mapped_column(String(32))
    architecture: Mapped[str] = mapped_column(String(16))
    vcpu: Mapped[int] = mapped_column(Integer)
    memory_gib: Mapped[float] = mapped_column(Float)
    numa_nodes: Mapped[int] = mapped_column(Integer)
    max_pods: Mapped[int | None] = mapped_column(Integer)
    accelerator_type: Mapped[str] = mapped_column(String(16))
    accelerator_name: Mapped[str | None] = mapped_column(String(64))
    accelerator_count: Mapped[int] = mapped_column(Integer)
    accelerator_memory_gib: Mapped[float] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class InstancePrice(Base):
    """One observed price: history, never updated in place."""

    __tablename__ = "instance_prices"
    __table_args__ = (
        CheckConstraint(_in("pricing_model", PRICING_MODELS), name="pricing_model"),
        CheckConstraint("usd_per_hour > 0", name="price_positive"),
        UniqueConstraint("instance_type", "region", "pricing_model", "effective_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    instance_type: Mapped[str] = mapped_column(
        ForeignKey("instance_types.instance_type", ondelete="RESTRICT")
    )
    region: Mapped[str] = mapped_column(String(32))
    pricing_model: Mapped[str] = mapped_column(String(16))
    usd_per_hour: Mapped[float] = mapped_column(Float)
    effective_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    fetched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    source: Mapped[str] = mapped_column(Text)
    # Spot rows: the newest price per availability zone that the stored median came from.
    zone_prices: Mapped[dict[str, float] | None] = mapped_column(JSON)


class RuntimeVersion(Base):
    """A server runtime release (e.g. vllm-cpu 0.19.0) and where its image lives."""

    __tablename__ = "runtime_versions"
    __table_args__ = (
        CheckConstraint(_in("status", RUNTIME_STATUSES), name="status"),
        UniqueConstraint("runtime", "version"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    runtime: Mapped[str] = mapped_column(String(32))
    version: Mapped[str] = mapped_column(String(64))
    image: Mapped[str] = mapped_column(String(255))
    digest: Mapped[str | None] = mapped_column(String(128))
    discovered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(16), default="discovered")


class Retraction(Base):
    """A run withdrawn from default reports, with why and what replaces it."""

    __tablename__ = "retractions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(255), unique=True)
    reason: Mapped[str] = mapped_column(Text)
    superseded_by: Mapped[str | None] = mapped_column(String(255))
    retracted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    retracted_by: Mapped[str | None] = mapped_column(String(255))

    __table_args__ = (CheckConstraint("length(reason) > 0", name="reason_not_empty"),)


class RegressionDecision(Base):
    """An owner's answer to the regressions the gate found in a runtime version: accepted as known (the
    regressions it names are not asked about again) or the version rejected (not measured again unless
    forced), with why, who and when."""

    __tablename__ = "regression_decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    runtime: Mapped[str] = mapped_column(String(32))
    version: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(255))
    decision: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    regressions: Mapped[list[str]] = mapped_column(JSON)  # the regressions' keys (`regression_keys`)
    decided_by: Mapped[str | None] = mapped_column(String(255))
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    dag_run_id: Mapped[str] = mapped_column(String(255))

    __table_args__ = (
        CheckConstraint(_in("decision", DECISIONS), name="decision"),
        CheckConstraint("length(reason) > 0", name="reason_not_empty"),
    )
