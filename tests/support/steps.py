"""Environments scripts/test.sh builds beside the tests (the vLLM CPU one takes about a minute on a fresh
machine, and the unit and integration tiers need none of it): a test that needs one waits for it here.

test.sh names a folder in ACCELBENCH_TEST_STEPS where each step it runs beside pytest leaves `<name>.rc`
(its exit status) and `<name>.log` when it ends. Without the variable (pytest run by hand, or a step that
ended before pytest started) nothing is pending and nothing waits.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

STEPS_SETTING = "ACCELBENCH_TEST_STEPS"
WAIT_S = 1800.0
# Read once, at import (tests/conftest.py imports this module first): each test runs with no ACCELBENCH_*
# variable of its caller's (tests/conftest.py's `accelbench_env`).
_FOLDER = os.environ.get(STEPS_SETTING)


def _folder() -> Path | None:
    return Path(_FOLDER) if _FOLDER else None


def pending(name: str) -> bool:
    """Whether test.sh is still running the step `name` beside the tests."""
    folder = _folder()
    return folder is not None and (folder / f"{name}.log").exists() and not (folder / f"{name}.rc").exists()


def wait_for(name: str, what: str) -> None:
    """Wait until test.sh's step `name` (which builds `what`) has ended; fail the test, with the step's
    last output, when it failed."""
    folder = _folder()
    if folder is None or not (folder / f"{name}.log").exists():
        return
    deadline = time.monotonic() + WAIT_S
    while not (folder / f"{name}.rc").exists():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: test.sh's step {name} still running after {WAIT_S:.0f} s", pytrace=False)
        time.sleep(1)
    rc = (folder / f"{name}.rc").read_text().strip()
    if rc != "0":
        tail = (folder / f"{name}.log").read_text(errors="replace")[-3000:]
        pytest.fail(f"{what}: test.sh's step {name} failed (exit {rc}):\n{tail}", pytrace=False)
