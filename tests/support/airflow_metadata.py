"""Airflow's metadata database for the tests: SQLite, migrated once per Airflow install and copied to each
home that needs one (`airflow db migrate` takes ~5 CPU-s; a run migrated one per lane and one for the real
deployment's module). The copy is the database `airflow db migrate` wrote, byte for byte."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.support.paths import REPO

CACHE = REPO / ".cache" / "airflow-db"


def _key() -> str:
    """Airflow's and its providers' installed versions: what decides the schema a migration leaves."""
    names = sorted(
        f"{d.metadata['Name']}=={d.version}"
        for d in importlib.metadata.distributions()
        if (d.metadata["Name"] or "").lower().startswith("apache-airflow")
    )
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


def migrated(target: Path, env: Mapping[str, str]) -> None:
    """Put a migrated metadata database at `target` (SQLite): migrated here under `env` (Airflow's settings
    of the caller, but for the database's path) the first time, behind a lock the other lanes wait on."""
    key = _key()
    template = CACHE / f"{key}.db"
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.is_file():
            partial = CACHE / f"{key}.partial.db"
            partial.unlink(missing_ok=True)
            subprocess.run(
                [sys.executable, "-m", "airflow", "db", "migrate"],
                check=True,
                capture_output=True,
                env=dict(env) | {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{partial}"},
            )
            os.replace(partial, template)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, target)
