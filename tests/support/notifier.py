"""A regression notifier the tests name in ACCELBENCH_REGRESSION_NOTIFIER (tests.support.notifier:record).

It lives here, not in a test module, so that its dotted path stays the same wherever the tests sit.
"""

from __future__ import annotations

from typing import Any

NOTIFIED: list[dict[str, Any]] = []


def record(context: dict[str, Any]) -> None:
    """Keep what the notifier was called with in NOTIFIED."""
    NOTIFIED.append(context)
