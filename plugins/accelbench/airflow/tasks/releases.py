"""Task bodies of the release discovery DAG: list the registry, record new versions, announce them."""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.catalog.db import migrate
from accelbench.config import Settings
from accelbench.runtime.discovery import record_new_releases, set_status, unannounced
from accelbench.runtime.recipes import recipe_for
from accelbench.runtime.registry import RegistryClient

log = logging.getLogger(__name__)


@fail_on_library_error
def discover_vllm_cpu_releases(include_prereleases: bool | None = None) -> list[dict[str, Any]]:
    settings = Settings.from_env()
    recipe = recipe_for("vllm-cpu")
    prereleases = settings.include_prereleases if include_prereleases is None else include_prereleases
    client = RegistryClient(recipe.repository(), settings.registry_url)
    listing = client.releases(include_prereleases=prereleases)
    log.info(
        "%s on %s: %d releases (%s), %d other tags ignored",
        recipe.repository(),
        settings.registry_url,
        len(listing.releases),
        ", ".join(r.version for r in listing.releases) or "none",
        len(listing.ignored),
    )
    for tag, why in sorted(listing.ignored.items()):
        log.debug("ignored tag %s: %s", tag, why)
    with catalog_engine(settings) as engine:
        migrate(engine)
        new = {r.version for r in record_new_releases(engine, listing.releases, recipe.runtime)}
        pending = unannounced(engine, recipe.runtime)
    if not pending:
        raise AirflowSkipException(
            f"no new vLLM CPU version: the catalog already has all {len(listing.releases)} releases"
        )
    for row in pending:
        how = "new" if row.version in new else "discovered earlier, not announced yet"
        log.info("vLLM CPU version %s (%s): %s (digest %s)", row.version, how, row.image, row.digest)
    return [{"version": r.version, "image": r.image, "digest": r.digest} for r in pending]


@fail_on_library_error
def mark(version: str, status: str) -> None:
    """runtime_versions.status of a vllm-cpu version: announced (its campaign was requested), then
    benchmarked (its campaign landed rows)."""
    with catalog_engine() as engine:
        known = set_status(engine, version, status)
    if known:
        log.info("vllm-cpu %s is now %s in the catalog", version, status)
    else:
        log.info("vllm-cpu %s is not in the catalog's runtime_versions: status not recorded", version)
