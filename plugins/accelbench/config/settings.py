"""Every setting together (`Settings`) and the names callers use: a variable by its field (`env_name`), one
variable read alone (`read_variable`)."""

from __future__ import annotations

from typing import Any

from accelbench.config.base import ENV_PREFIX, G
from accelbench.config.groups import (
    AirflowSettings,
    AwsSettings,
    CatalogSettings,
    CpuTierSettings,
    GpuTierSettings,
    KubernetesSettings,
    LakeSettings,
    LibrarySettings,
    LoadgenSettings,
    LocalServerSettings,
    NeuronTierSettings,
    ReleaseSettings,
)


class Settings(
    LibrarySettings,
    CatalogSettings,
    LakeSettings,
    AwsSettings,
    ReleaseSettings,
    CpuTierSettings,
    GpuTierSettings,
    NeuronTierSettings,
    AirflowSettings,
    KubernetesSettings,
    LocalServerSettings,
    LoadgenSettings,
):
    """Every knob of the suite: the groups above together, with the embedded defaults (no AWS, SQLite and the
    lake under the home). A reader of one concern may take its group alone (`CatalogSettings.from_env()`);
    every variable keeps its name whichever class reads it."""

    def group(self, kind: type[G]) -> G:
        """This group's settings as `kind` holds them (e.g. `settings.group(KubernetesSettings)`)."""
        return kind.model_construct(**{name: getattr(self, name) for name in kind.model_fields})


def env_name(field: str) -> str:
    """The environment variable of a Settings field (home -> ACCELBENCH_HOME); a KeyError for a name that
    is not a field, so that a module constant cannot name an undeclared variable."""
    if field not in Settings.model_fields:
        raise KeyError(f"{field!r} is not a field of accelbench.config.Settings")
    return ENV_PREFIX + field.upper()


# Names callers put in messages; each derives from its field, so a renamed field cannot leave a stale one.
LAKE_SETTING = env_name("lake_uri")  # a directory or s3://bucket/prefix; default: $ACCELBENCH_HOME/lake
MODE_SETTING = env_name("execution_mode")


def read_variable(variable: str) -> Any:
    """The value of one variable named in full (e.g. a form field's `default_env`), read and checked alone."""
    field = variable.removeprefix(ENV_PREFIX).lower()
    if not variable.startswith(ENV_PREFIX) or field not in Settings.model_fields:
        raise KeyError(f"{variable} is not an accelbench setting (accelbench.config.Settings)")
    return getattr(Settings.from_env(field), field)
