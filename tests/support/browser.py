"""Debian's headless Chromium on a closed network, and where the browser tests keep their screenshots."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.paths import REPO

CHROMIUM = "/usr/bin/chromium"
# Flags for a closed network and a root user (Chromium otherwise phones home and needs a sandbox).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def artifacts_dir() -> Path:
    """test-artifacts/ (or $ACCELBENCH_TEST_ARTIFACTS), created."""
    path = Path(os.environ.get("ACCELBENCH_TEST_ARTIFACTS") or REPO / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path
