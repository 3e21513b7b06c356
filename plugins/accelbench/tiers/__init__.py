"""The tier registry: every tier the suite plans, runs and reports, one object each (accelbench.tiers.base).

Adding a tier is one module that builds a Tier and one `register` call here (plus its NodePool in infra/);
its settings group and its servers' own fields are declared in that module and registered with it.
Everything tier-specific is asked of the registry: the catalog's seed check and EC2 verification, the
planner (ranks, fit, guards, server fields), the benchmark pod (NodePool, taints, device, security, start-up
allowance), the node budget (its DaemonSets), local mode (its environment, its devices) and host facts,
ingest's partitions, the DAGs' enums, the Athena DDL and the generated docs. A test may register a tier of
its own (`registered`) and remove it afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from accelbench.catalog.seed_file import InstanceSpec, read_seed
from accelbench.config import register_tier_settings
from accelbench.core.problems import Problem
from accelbench.core.spec import register_tier_fields
from accelbench.errors import ConfigError
from accelbench.runtime.recipes import Recipe
from accelbench.tiers.base import Tier
from accelbench.tiers.cpu import CPU
from accelbench.tiers.gpu import GPU
from accelbench.tiers.neuron import NEURON

_TIERS: dict[str, Tier] = {}


def register(tier: Tier) -> Tier:
    """Add a tier; its name, runtime, NodePool and families must be its own."""
    for other in _TIERS.values():
        clash = (
            ("name", tier.name == other.name),
            ("runtime", tier.runtime == other.runtime),
            ("NodePool", tier.placement.nodepool == other.placement.nodepool),
            ("families", bool(tier.families & other.families)),
        )
        for what, same in clash:
            if same:
                raise ConfigError("tier", tier.name, f"its {what} is the {other.name} tier's already")
    register_tier_settings(tier.name, tier.settings)
    _TIERS[tier.name] = tier
    register_tier_fields(tier.name, tier.server_model)
    return tier


def unregister(name: str) -> None:
    _TIERS.pop(name, None)
    register_tier_fields(name, None)
    register_tier_settings(name, None)


@contextmanager
def registered(tier: Tier) -> Iterator[Tier]:
    """A tier registered for the length of a block (tests)."""
    register(tier)
    try:
        yield tier
    finally:
        unregister(tier.name)


def all_tiers() -> tuple[Tier, ...]:
    """Every registered tier, in registration order (the built-ins: cpu, gpu, neuron)."""
    return tuple(_TIERS.values())


def names() -> tuple[str, ...]:
    return tuple(_TIERS)


def runtimes() -> tuple[str, ...]:
    return tuple(t.runtime for t in _TIERS.values())


def recorded_only() -> tuple[Tier, ...]:
    """The tiers whose releases discovery records in the catalog without announcing them: every tier whose
    recipe has a release source, but the CPU tier's (its versions are announced, one campaign each)."""
    return tuple(t for t in _TIERS.values() if t.recipe.has_release_source and t is not CPU)


def tier(name: str, field: str = "accelerator_type") -> Tier:
    """The tier named `name` (a catalog row's or a spec's accelerator_type); an error names `field`."""
    try:
        return _TIERS[name]
    except KeyError:
        raise ConfigError(field, name, f"expected one of {', '.join(_TIERS)}") from None


def of_runtime(runtime: str, field: str = "runtime") -> Tier:
    """The tier whose server recipe is `runtime`."""
    for t in _TIERS.values():
        if t.runtime == runtime:
            return t
    raise ConfigError(field, runtime, f"expected one of {', '.join(runtimes())}")


def recipe_for(runtime: str, field: str = "runtime") -> Recipe:
    return of_runtime(runtime, field).recipe


def seed_problem(spec: InstanceSpec) -> Problem | None:
    """What the tiers say of a seed-file row: a known tier, one of its families, its accelerator."""
    if spec.accelerator_type not in _TIERS:
        return Problem("accelerator_type", spec.accelerator_type, f"expected one of {', '.join(_TIERS)}")
    return _TIERS[spec.accelerator_type].seed_problem(spec)


def cores_per_device(spec: InstanceSpec) -> int | None:
    """What EC2 verification compares with CoreInfo.Count: the row's tier's ranks per device, if it counts."""
    known = _TIERS.get(spec.accelerator_type)
    return known.cores_per_device(spec) if known else None


def load_seed(path: Path | None = None) -> list[InstanceSpec]:
    """The seed file (default: the shipped one), every row checked against its tier."""
    return read_seed(path, seed_problem)


def devices_here() -> str | None:
    """This host's accelerators as every tier's probe finds them (host_accelerators); None: none."""
    found = [d for t in _TIERS.values() if (d := t.devices_here())]
    return "; ".join(found) or None


for _builtin in (CPU, GPU, NEURON):
    register(_builtin)

__all__ = [
    "CPU",
    "GPU",
    "NEURON",
    "Tier",
    "all_tiers",
    "cores_per_device",
    "devices_here",
    "load_seed",
    "names",
    "of_runtime",
    "recipe_for",
    "recorded_only",
    "register",
    "registered",
    "runtimes",
    "seed_problem",
    "tier",
    "unregister",
]
