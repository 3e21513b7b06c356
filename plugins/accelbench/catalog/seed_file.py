"""The shipped instance-type data file (or ACCELBENCH_SEED_FILE): parsed and validated, no database.

Kept apart from the catalog's SQL code so that DAG files can read it at parse time cheaply.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

from accelbench.core.families import ARCHITECTURES, refuse_graviton2, split_instance_type
from accelbench.core.problems import Problem
from accelbench.errors import ConfigError

# What the tiers say of a row (accelbench.tiers.seed_problem): its tier, its family, its accelerator.
TierCheck = Callable[["InstanceSpec"], Problem | None]


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
    # The kubelet's ENI-limited pod count (Karpenter's label karpenter.k8s.aws/instance-pods): it sets the
    # kube-reserved memory of an AL2023 node, which the node budget needs. None = unknown (an old row).
    max_pods: int | None
    accelerator_type: str
    accelerator_name: str | None
    accelerator_count: int
    accelerator_memory_gib: float


SPEC_FIELDS = tuple(f.name for f in fields(InstanceSpec))


def default_seed_path() -> Path:
    return Path(str(resources.files("accelbench.catalog") / "data" / "instance_types.csv"))


def _parse_row(row: dict[str, str], where: str, tier_check: TierCheck) -> InstanceSpec:
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
        max_pods=int(num("max_pods", int)) if (row.get("max_pods") or "").strip() else None,
        accelerator_type=row["accelerator_type"],
        accelerator_name=row.get("accelerator_name") or None,
        accelerator_count=int(num("accelerator_count", int)),
        accelerator_memory_gib=float(num("accelerator_memory_gib", float)),
    )
    if spec.architecture not in ARCHITECTURES:
        raise ConfigError(
            f"{where}.architecture",
            spec.architecture,
            f"expected one of {', '.join(ARCHITECTURES)}",
        )
    if spec.max_pods is not None and spec.max_pods < 1:
        raise ConfigError(f"{where}.max_pods", spec.max_pods, "must be at least 1")
    if problem := tier_check(spec):
        raise ConfigError(f"{where}.{problem.field}", problem.value, problem.message)
    return spec


def read_seed(path: Path | None, tier_check: TierCheck) -> list[InstanceSpec]:
    """Parse and validate the whole file before anything is written; `tier_check` is what the tiers say of
    each row (accelbench.tiers.load_seed passes the registry's: the catalog sits below the tiers)."""
    path = path or default_seed_path()
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise ConfigError("seed_file", str(path), f"cannot be read ({exc.strerror})") from None
    specs = [_parse_row(row, f"{path.name}:{n}", tier_check) for n, row in enumerate(rows, start=2)]
    seen: set[str] = set()
    for spec in specs:
        if spec.instance_type in seen:
            raise ConfigError("seed_file", str(path), f"lists {spec.instance_type} twice")
        seen.add(spec.instance_type)
    return specs
