"""Every `ACCELBENCH_*` environment variable, declared once: its type, default and meaning.

The library runs the same in a task, a pod or a shell: each call of `Settings.from_env()` reads the
environment afresh (nothing is cached at import, so tests may change it per test), and a bad value fails
with a ConfigError naming the variable. Settings are nested by concern (`settings.catalog`, `settings.lake`,
`settings.kubernetes`, ..., and each registered tier's own group, `settings.tier("gpu")`), while every
variable keeps its flat name. The configuration reference (docs/reference/configuration.md) is rendered from
these declarations by `reference_markdown()`, so the page cannot drift from the code.
"""

from __future__ import annotations

from accelbench.config.base import (
    DEFAULT_REGIONS,
    ENV_PREFIX,
    OPERATOR_SET,
    S3_ENDPOINT_SETTINGS,
    ExecutionMode,
    TierSettings,
    UserPath,
    setting,
)
from accelbench.config.groups import (
    AirflowSettings,
    AwsSettings,
    CatalogSettings,
    HomeSettings,
    KubernetesSettings,
    LakeSettings,
    LibrarySettings,
    LoadgenSettings,
    LocalServerSettings,
    ReleaseSettings,
)
from accelbench.config.reference import reference_markdown
from accelbench.config.settings import (
    LAKE_SETTING,
    MODE_SETTING,
    Settings,
    env_name,
    fields,
    read_variable,
    register_tier_settings,
    setting_default,
    tier_groups,
)

__all__ = [
    "DEFAULT_REGIONS",
    "ENV_PREFIX",
    "LAKE_SETTING",
    "MODE_SETTING",
    "OPERATOR_SET",
    "S3_ENDPOINT_SETTINGS",
    "AirflowSettings",
    "AwsSettings",
    "CatalogSettings",
    "ExecutionMode",
    "HomeSettings",
    "KubernetesSettings",
    "LakeSettings",
    "LibrarySettings",
    "LoadgenSettings",
    "LocalServerSettings",
    "ReleaseSettings",
    "Settings",
    "TierSettings",
    "UserPath",
    "env_name",
    "fields",
    "read_variable",
    "reference_markdown",
    "register_tier_settings",
    "setting",
    "setting_default",
    "tier_groups",
]
