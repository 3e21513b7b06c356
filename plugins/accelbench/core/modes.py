"""Where a BenchmarkSpec runs: `local` (a vLLM child process) or `kubernetes` (a benchmark pod).

Both executors take a spec and leave the same thing behind: the load generator's raw evidence in
the lake's raw/ area, which the ingest step turns into Parquet. The mode is configuration: the
campaign form's `execution_mode`, defaulting to ACCELBENCH_EXECUTION_MODE.
"""

from __future__ import annotations

import os
from typing import Literal, get_args

from accelbench.config import ENV_PREFIX
from accelbench.errors import ConfigError

ExecutionMode = Literal["local", "kubernetes"]
MODES: tuple[str, ...] = get_args(ExecutionMode)
MODE_SETTING = ENV_PREFIX + "EXECUTION_MODE"


def default_mode() -> str:
    """ACCELBENCH_EXECUTION_MODE, or local: read from the environment only (safe at parse time)."""
    return check_mode(os.environ.get(MODE_SETTING, "").strip() or "local", MODE_SETTING)


def check_mode(mode: str, field: str = "execution_mode") -> str:
    if mode not in MODES:
        raise ConfigError(field, mode, f"one of {', '.join(MODES)}")
    return mode
