"""checkov run offline from its own environment (.venv-checkov: it pins an old boto3), and its reports read.

Used by test_checkov (infra/) and by the tests that scan rendered manifests written to a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tests.support.paths import REPO
from tests.support.servers import missing
from tests.support.steps import wait_for

CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"


def checkov_or_skip() -> Path:
    """The checkov executable; missing is a failure in CI and a skip elsewhere."""
    wait_for("checkov-env", "checkov and hadolint in .venv-checkov")
    if not CHECKOV.is_file():
        missing(f"checkov in {CHECKOV.relative_to(REPO)} (scripts/checkov-env.sh)")
    return CHECKOV


def run_checkov(
    paths: Iterable[Path], frameworks: Sequence[str], *extra_args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run checkov offline on files and/or directories; JSON reports on stdout (see ``reports``).

    --skip-download: no Prisma/Bridgecrew downloads (guidelines, external checks); nothing else is fetched.
    """
    cmd = [str(checkov_or_skip()), "--skip-download", "--output", "json", "--framework", *frameworks]
    for path in paths:
        cmd += ["--directory" if Path(path).is_dir() else "--file", str(path)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BC_", "PRISMA_", "CKV_"))}
    env |= {"ANSI_COLORS_DISABLED": "1", "LOG_LEVEL": "WARNING"}
    return subprocess.run(
        [*cmd, *extra_args], capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout, check=False
    )


def reports(stdout: str) -> list[dict[str, Any]]:
    """checkov prints a JSON report (a dict) or a list of them; several may follow one another."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    text, pos = stdout.strip(), 0
    while pos < len(text):
        value, end = decoder.raw_decode(text, pos)
        found += value if isinstance(value, list) else [value]
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return found


def failures(report: dict[str, Any]) -> list[str]:
    """One line per failed check of a report."""
    return [
        f"{c['check_id']} {c['resource']} {c['file_path']}:{c['file_line_range']} {c['check_name']}"
        for c in report["results"].get("failed_checks", [])
    ]
