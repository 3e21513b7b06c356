"""What every group of settings shares: the variables' prefix, the reference page's group titles, how a field
is declared (`_setting`) and read (`_Group.from_env`), and a pydantic error in the words of a ConfigError."""

from __future__ import annotations

import types
from collections.abc import Collection
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from accelbench.errors import ConfigError

ENV_PREFIX = "ACCELBENCH_"
S3_ENDPOINT_SETTINGS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")  # an S3-compatible lake, first wins
DEFAULT_REGIONS = ("us-east-1",)
ExecutionMode = Literal["local", "kubernetes"]  # here, below core, so that Settings can check it

# The groups of the reference page, in order; each tier's own group (TierSettings.title) comes between the
# two parts, in the registry's order.
LIBRARY, CATALOG, LAKE, AWS, RELEASES = (
    "Library: home, models, execution mode",
    "Catalog",
    "Lake and imports",
    "AWS: prices and instance data",
    "Releases, version campaigns and regressions",
)
AIRFLOW, KUBERNETES, LOCAL, LOADGEN = (
    "Airflow",
    "Kubernetes mode",
    "Local server",
    "Load generator (`accelbench-loadgen`, the benchmark pod's main container)",
)
TITLES_BEFORE_TIERS = (LIBRARY, CATALOG, LAKE, AWS, RELEASES)
TITLES_AFTER_TIERS = (AIRFLOW, KUBERNETES, LOCAL, LOADGEN)
# Set by the benchmark operator on the load-generator container; never set them yourself.
OPERATOR_SET = "set by the benchmark operator in the pod: "


# A path from the environment, `~` expanded (pydantic makes the Path).
UserPath = Annotated[Path, AfterValidator(Path.expanduser)]
# What a pydantic error type says in a ConfigError (pydantic converts the text; these are its words here).
_WHY = {
    "bool_parsing": "expected one of 1/0, true/false, yes/no, on/off",
    "int_parsing": "not an integer",
    "int_from_float": "not an integer",
    "float_parsing": "not a number",
}


def setting(
    default: Any = None,
    *,
    description: str,
    group: str,
    shown_default: str | None = None,
    shown_type: str | None = None,
    default_factory: Any = None,
    minimum: int | None = None,
) -> Any:
    """A Field with what the reference page shows: its group, and a default or type in words where the
    value alone would mislead (a default derived from ACCELBENCH_HOME, a string holding JSON)."""
    extra: dict[str, JsonValue] = {"group": group}
    if shown_default is not None:
        extra["shown_default"] = shown_default
    if shown_type is not None:
        extra["shown_type"] = shown_type
    if minimum is not None:
        extra["minimum"] = minimum
    if default_factory is not None:
        return Field(default_factory=default_factory, description=description, json_schema_extra=extra)
    return Field(default, description=description, json_schema_extra=extra, ge=minimum)


_setting = setting  # the groups of this package declare their fields with it
# The fields one from_env() call reads (None: all); a context variable, so that concurrent reads stay apart.
_ONLY: ContextVar[frozenset[str] | None] = ContextVar("accelbench_settings_only", default=None)


class _Environment(EnvSettingsSource):
    """The environment, or only the variables of the fields that one reader asked for."""

    def __call__(self) -> dict[str, Any]:
        values = super().__call__()
        only = _ONLY.get()
        return values if only is None else {k: v for k, v in values.items() if k in only}


def _default_home() -> Path:
    return Path.home() / ".accelbench"


class _Group(BaseSettings):
    """What every group of settings shares: its variables are `ACCELBENCH_<FIELD>`, read afresh from the
    environment by each `from_env()` (keyword arguments first; no .env or secrets file), empty values count
    as unset, pydantic converts the text and a bad value fails with a ConfigError naming the variable.

    Fields whose value a domain parser checks (JSON, quantities, CPU lists, image references) stay strings,
    so that their error keeps the parser's detail.
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then the environment: no .env or secrets file, which a task would not expect."""
        return init_settings, _Environment(settings_cls)

    @field_validator("*", mode="before")
    @classmethod
    def _from_text(cls, value: Any, info: ValidationInfo) -> Any:
        """Empty environment text means the default (except for the regions, where it names no region); a
        comma-separated list becomes its items. Every other conversion is pydantic's (`from_env` names the
        variable in its errors)."""
        if not isinstance(value, str):
            return value
        name = str(info.field_name)
        field = cls.model_fields[name]
        raw = value.strip()
        if raw == "" and name != "regions":
            return field.get_default(call_default_factory=True)
        if _base_type(field.annotation) is tuple:
            items = tuple(p.strip() for p in raw.split(",") if p.strip())
            if not items and name == "regions":
                raise ConfigError(ENV_PREFIX + name.upper(), raw, "names no region")
            return items or field.get_default(call_default_factory=True)
        return raw

    @classmethod
    def from_env(cls, *only: str) -> Self:
        """This group's settings in the environment now. With field names, only those variables are read
        and checked (the others keep their defaults): a reader of one setting, e.g. while a DAG file is
        parsed, is not failed by a bad value of another."""
        unknown = sorted(set(only) - set(cls.model_fields))
        if unknown:
            raise KeyError(f"not a setting: {', '.join(unknown)}")
        return cls.read(frozenset(only) if only else None)

    @classmethod
    def read(cls, only: Collection[str] | None) -> Self:
        """The group with the variables of `only` read (None: all of them; empty: none, the defaults)."""
        token = _ONLY.set(None if only is None else frozenset(only))
        try:
            return cls()
        except ValidationError as exc:
            raise _named(exc, cls.model_fields) from None
        finally:
            _ONLY.reset(token)


class TierSettings(_Group):
    """A tier's own group of settings: each tier declares its subclass beside it (accelbench.tiers:
    `Tier.settings`), whose fields keep the variable names users have (`ACCELBENCH_<FIELD>`); `title` heads
    its table on the reference page."""

    title: ClassVar[str]


def _named(exc: ValidationError, fields: dict[str, FieldInfo]) -> ConfigError:
    """pydantic's first error as a ConfigError naming the variable, in the words of the reference page."""
    error = exc.errors()[0]
    name = str(error["loc"][0]) if error["loc"] else "?"
    field = fields.get(name)
    ctx = error.get("ctx") or {}
    why = _WHY.get(error["type"], error["msg"])
    if error["type"] == "greater_than_equal":
        why = f"must be at least {ctx['ge']}"
    elif error["type"] == "literal_error" and field is not None:
        why = f"one of {', '.join(str(v) for v in get_args(field.annotation))}"
    return ConfigError(ENV_PREFIX + name.upper() if field else name, error.get("input"), why)


def _base_type(annotation: Any) -> Any:
    """int for `int | None`, tuple for `tuple[str, ...]`: what the text must become."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Annotated:  # UserPath: a Path with its validator
        annotation = get_args(annotation)[0]
    return get_origin(annotation) or annotation
