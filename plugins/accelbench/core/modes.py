"""Where a BenchmarkSpec runs: `local` (a vLLM child process) or `kubernetes` (a benchmark pod).

Both executors take a spec and leave the same thing behind: the load generator's raw evidence in
the lake's raw/ area, which the ingest step turns into Parquet. The mode is configuration: the
campaign form's `execution_mode`, defaulting to ACCELBENCH_EXECUTION_MODE.
"""

from __future__ import annotations

from typing import get_args

from accelbench.config import MODE_SETTING, ExecutionMode, Settings
from accelbench.errors import ConfigError

__all__ = ["MODES", "MODE_SETTING", "ExecutionMode", "check_mode", "default_mode"]
MODES: tuple[str, ...] = get_args(ExecutionMode)


def default_mode() -> str:
    """ACCELBENCH_EXECUTION_MODE, or local: that variable alone, from the environment (safe at parse time)."""
    return Settings.from_env("execution_mode").library.execution_mode


def check_mode(mode: str, field: str = "execution_mode") -> str:
    if mode not in MODES:
        raise ConfigError(field, mode, f"one of {', '.join(MODES)}")
    return mode
