"""Every setting together, by concern (`Settings`: `settings.catalog.catalog_url`, `settings.tier("gpu")`),
and the names callers use: a variable by its field (`env_name`), one variable read alone (`read_variable`).

The tiers' own groups are declared by the tiers (accelbench.tiers, above this package), which register them
here (`register_tier_settings`); a variable keeps its name `ACCELBENCH_<FIELD>` whichever group declares it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, SerializeAsAny
from pydantic.fields import FieldInfo

from accelbench.config.base import ENV_PREFIX, TierSettings, _Group
from accelbench.config.groups import (
    AirflowSettings,
    AwsSettings,
    CatalogSettings,
    KubernetesSettings,
    LakeSettings,
    LibrarySettings,
    LoadgenSettings,
    LocalServerSettings,
    ReleaseSettings,
)

G = TypeVar("G", bound=_Group)
# tier name -> its group (accelbench.tiers.register fills it), in the registry's order.
_TIER_GROUPS: dict[str, type[TierSettings]] = {}


def register_tier_settings(tier: str, group: type[TierSettings] | None) -> None:
    """Record (or, with None, forget) the settings group of the tier named `tier`; its fields must be its
    own, so that each variable has one declaration."""
    if group is None:
        _TIER_GROUPS.pop(tier, None)
        return
    taken = {name for kind in groups(but=tier) for name in kind.model_fields}
    clash = sorted(set(group.model_fields) & taken)
    if clash:
        raise ValueError(f"the {tier} tier's settings {', '.join(clash)} are declared already")
    _TIER_GROUPS[tier] = group


class Settings(BaseModel):
    """Every knob of the suite, by concern, with the embedded defaults (no AWS, SQLite and the lake under the
    home). A reader of one concern may take its group alone (`CatalogSettings.from_env()`)."""

    model_config = ConfigDict(frozen=True)

    library: LibrarySettings
    catalog: CatalogSettings
    lake: LakeSettings
    aws: AwsSettings
    releases: ReleaseSettings
    airflow: AirflowSettings
    kubernetes: KubernetesSettings
    local: LocalServerSettings
    loadgen: LoadgenSettings
    tiers: Mapping[str, SerializeAsAny[TierSettings]]  # each registered tier's own group, by its name

    @classmethod
    def from_env(cls, *only: str) -> Settings:
        """Every group in the environment now. With field names, only those variables are read and checked
        (the others keep their defaults): a reader of one setting, e.g. while a DAG file is parsed, is not
        failed by a bad value of another."""
        unknown = sorted(set(only) - set(_fields_naming(*only)))
        if unknown:
            raise KeyError(f"not a setting: {', '.join(unknown)}")

        def read(group: type[G]) -> G:
            return group.read(None if not only else [n for n in only if n in group.model_fields])

        concerns: dict[str, Any] = {name: read(group) for name, group in _CONCERNS.items()}
        return cls(**concerns, tiers={tier: read(group) for tier, group in _TIER_GROUPS.items()})

    def tier(self, name: str) -> TierSettings:
        """The settings group of the tier named `name` (a KeyError when it has none)."""
        return self.tiers[name]

    def value(self, field: str) -> Any:
        """A field's value by its name, from the group that declares it: for code that names a setting as
        data (a recipe's image repository, a local build's interpreter)."""
        for name, kind in _CONCERNS.items():
            if field in kind.model_fields:
                return getattr(getattr(self, name), field)
        for group in self.tiers.values():
            if field in type(group).model_fields:
                return getattr(group, field)
        raise KeyError(f"{field!r} is not a field of accelbench.config.Settings")


# Settings' attribute -> the group class it holds, from its declaration above.
_CONCERNS = {
    name: cast(type[_Group], info.annotation)
    for name, info in Settings.model_fields.items()
    if name != "tiers"
}


def groups(but: str | None = None) -> list[type[_Group]]:
    """Every group class, the concerns' then the registered tiers' (less the tier `but`)."""
    return [*_CONCERNS.values(), *(g for t, g in _TIER_GROUPS.items() if t != but)]


def tier_groups() -> dict[str, type[TierSettings]]:
    """The registered tiers' groups, by tier name."""
    return dict(_TIER_GROUPS)


# The tiers register their groups when the registry is imported. Config sits below the tiers and cannot name
# them at its top, so a name no group declares makes it import the registry by name once: a tier's setting
# read before anything imported the tiers (a recipe's image, in a process that plans nothing) is known.
_REGISTRY = "accelbench.tiers"


def _fields_naming(*names: str) -> dict[str, FieldInfo]:
    """`fields()`, with the tiers' groups registered first when one of `names` is not declared yet."""
    found = fields()
    if any(n not in found for n in names) and _REGISTRY not in sys.modules:
        importlib.import_module(_REGISTRY)
        found = fields()
    return found


def fields() -> dict[str, FieldInfo]:
    """Every declared field by name, once (the home is shared by the groups that live under it)."""
    found: dict[str, FieldInfo] = {}
    for group in groups():
        for name, info in group.model_fields.items():
            found.setdefault(name, info)
    return found


def env_name(field: str) -> str:
    """The environment variable of a settings field (home -> ACCELBENCH_HOME); a KeyError for a name that
    is not a field, so that a module constant cannot name an undeclared variable."""
    if field not in _fields_naming(field):
        raise KeyError(f"{field!r} is not a field of accelbench.config.Settings")
    return ENV_PREFIX + field.upper()


def setting_default(field: str) -> Any:
    """The default of a settings field, as declared (a factory's default made)."""
    found = _fields_naming(field)
    if field not in found:
        raise KeyError(f"{field!r} is not a field of accelbench.config.Settings")
    return found[field].get_default(call_default_factory=True)


# Names callers put in messages; each derives from its field, so a renamed field cannot leave a stale one.
LAKE_SETTING = env_name("lake_uri")  # a directory or s3://bucket/prefix; default: $ACCELBENCH_HOME/lake
MODE_SETTING = env_name("execution_mode")


def read_variable(variable: str) -> Any:
    """The value of one variable named in full (e.g. a form field's `default_env`), read and checked alone."""
    field = variable.removeprefix(ENV_PREFIX).lower()
    if not variable.startswith(ENV_PREFIX) or field not in _fields_naming(field):
        raise KeyError(f"{variable} is not an accelbench setting (accelbench.config.Settings)")
    return Settings.from_env(field).value(field)
