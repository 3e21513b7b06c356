"""Load the shipped instance-type data file and upsert it into the catalog, logging every change."""

from __future__ import annotations

import csv
import logging
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from sqlalchemy import Engine, select

from accelbench.catalog.db import session_scope
from accelbench.catalog.families import CPU_FAMILIES, refuse_graviton2, split_instance_type
from accelbench.catalog.models import ACCELERATOR_TYPES, ARCHITECTURES, InstanceType
from accelbench.errors import ConfigError

log = logging.getLogger(__name__)
SEED_SOURCE = "accelbench seed file"


@dataclass(frozen=True)
class InstanceSpec:
    """The facts about an instance type that the seed file carries and EC2 can confirm."""

    instance_type: str
    family: str
    size: str
    generation: str
    architecture: str
    vcpu: int
    memory_gib: float
    numa_nodes: int
    accelerator_type: str
    accelerator_name: str | None
    accelerator_count: int
    accelerator_memory_gib: float


SPEC_FIELDS = tuple(f.name for f in fields(InstanceSpec))


def default_seed_path() -> Path:
    return Path(str(resources.files("accelbench.catalog") / "data" / "instance_types.csv"))


def _parse_row(row: dict[str, str], where: str) -> InstanceSpec:
    def num(name: str, kind: type[int] | type[float]) -> int | float:
        raw = row.get(name, "")
        try:
            return kind(raw)
        except ValueError:
            raise ConfigError(f"{where}.{name}", raw, f"not a{' n' if kind is int else ''} number") from None

    name = row.get("instance_type", "").strip()
    refuse_graviton2(name, field=f"{where}.instance_type")
    family, size = split_instance_type(name)
    if family != row.get("family") or size != row.get("size"):
        raise ConfigError(
            f"{where}.family/size",
            (row.get("family"), row.get("size")),
            f"do not match instance_type {name!r}",
        )
    spec = InstanceSpec(
        instance_type=name,
        family=family,
        size=size,
        generation=row["generation"],
        architecture=row["architecture"],
        vcpu=int(num("vcpu", int)),
        memory_gib=float(num("memory_gib", float)),
        numa_nodes=int(num("numa_nodes", int)),
        accelerator_type=row["accelerator_type"],
        accelerator_name=row.get("accelerator_name") or None,
        accelerator_count=int(num("accelerator_count", int)),
        accelerator_memory_gib=float(num("accelerator_memory_gib", float)),
    )
    if spec.accelerator_type not in ACCELERATOR_TYPES:
        raise ConfigError(
            f"{where}.accelerator_type",
            spec.accelerator_type,
            f"expected one of {', '.join(ACCELERATOR_TYPES)}",
        )
    if spec.architecture not in ARCHITECTURES:
        raise ConfigError(
            f"{where}.architecture",
            spec.architecture,
            f"expected one of {', '.join(ARCHITECTURES)}",
        )
    if spec.accelerator_type == "cpu" and spec.family not in CPU_FAMILIES:
        raise ConfigError(
            f"{where}.family",
            spec.family,
            f"not a CPU family this suite benchmarks ({', '.join(sorted(CPU_FAMILIES))})",
        )
    return spec


def load_seed(path: Path | None = None) -> list[InstanceSpec]:
    """Parse and validate the whole file before anything is written."""
    path = path or default_seed_path()
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise ConfigError("seed_file", str(path), f"cannot be read ({exc.strerror})") from None
    specs = [_parse_row(row, f"{path.name}:{n}") for n, row in enumerate(rows, start=2)]
    seen: set[str] = set()
    for spec in specs:
        if spec.instance_type in seen:
            raise ConfigError("seed_file", str(path), f"lists {spec.instance_type} twice")
        seen.add(spec.instance_type)
    return specs


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
