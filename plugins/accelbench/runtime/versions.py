"""Which runtime version a campaign uses: the catalog's newest, else the recipe's default."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from packaging.version import InvalidVersion, Version
from sqlalchemy import Engine, func, select

from accelbench.catalog.db import session_scope
from accelbench.catalog.models import RuntimeVersion
from accelbench.runtime.recipes import Recipe

log = logging.getLogger(__name__)


def _key(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


def resolve_version(
    engine: Engine,
    recipe: Recipe,
    as_of: datetime | None = None,
    instance_families: Iterable[str] = (),
) -> tuple[str, str]:
    """(version, where it came from): the newest known at `as_of` (a run's logical date), else now, that
    every one of `instance_families` can run (recipe.support_problem: Inf2 and Trn1 stop at the Neuron
    0.16 line while newer DLCs are recorded too); else the recipe's default.

    vllm-cpu never borrows the GPU framework's version.
    """
    families = sorted(set(instance_families))
    query = select(RuntimeVersion.version).where(
        RuntimeVersion.runtime == recipe.runtime, RuntimeVersion.status != "failed"
    )
    if as_of is not None:  # released before the date (discovered, when the release date is unknown)
        query = query.where(func.coalesce(RuntimeVersion.released_at, RuntimeVersion.discovered_at) <= as_of)
    with session_scope(engine) as session:
        rows = [v for v in session.scalars(query).all() if not _key(v).is_prerelease]
    runnable = [v for v in rows if not any(recipe.support_problem(f, v) for f in families)]
    if runnable:
        newest = max(runnable, key=_key)
        return newest, f"catalog runtime_versions ({recipe.runtime})"
    if rows:
        log.warning(
            "no %s version in the catalog that %s can run (newest known: %s): using the default %s",
            recipe.runtime,
            ", ".join(families),
            max(rows, key=_key),
            recipe.default_version,
        )
        return recipe.default_version, f"default of the {recipe.runtime} recipe ({', '.join(families)})"
    log.warning(
        "no %s version in the catalog's runtime_versions: using the default %s",
        recipe.runtime,
        recipe.default_version,
    )
    return recipe.default_version, f"default of the {recipe.runtime} recipe (catalog has none)"
