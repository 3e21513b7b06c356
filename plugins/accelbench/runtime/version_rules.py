"""How a vLLM version is spelt, and which one local mode may measure: rules without the catalog (the
DAG files read the pattern at parse time); `versions.py` picks a version from the catalog."""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from accelbench.errors import ConfigError

VERSION_PATTERN = r"^v?\d+\.\d+\.\d+([.-]?[A-Za-z0-9]+)*$"


def check_version(version: str | None, field: str = "version") -> str:
    """A vLLM CPU version as the lake and the image tag spell it: `0.19.0` (a leading v dropped)."""
    if not version or not re.fullmatch(VERSION_PATTERN, version):
        raise ConfigError(field, version, "not a vLLM CPU version (e.g. 0.19.0)")
    try:
        Version(version)
    except InvalidVersion:
        raise ConfigError(field, version, "not a PEP 440 version") from None
    return version.removeprefix("v")


def local_mode_version(requested: str | None, installed: str, where: str, field: str = "version") -> str:
    """Local mode serves the vLLM installed beside the worker (`installed`, from the interpreter
    `where`): that is the version its rows must carry, so another requested version (in the request's
    `field`) is refused."""
    if requested is not None and Version(requested) != Version(installed):
        raise ConfigError(
            field,
            requested,
            f"local mode serves the vLLM installed beside {where} ({installed}); "
            "measure other versions in kubernetes mode",
        )
    return installed
