"""What every accelbench DAG shares: start date, concurrency, param patterns, default regions."""

from __future__ import annotations

from typing import Any

import pendulum

from accelbench.config import Settings

REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d+$"
INSTANCE_TYPE_PATTERN = r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$"
MODEL_PATTERN = r"^[A-Za-z0-9/][A-Za-z0-9._/-]*$"  # a model id or a local path; nothing a shell reads
VERSION_PATTERN = r"^v?\d+\.\d+\.\d+([.-]?[A-Za-z0-9]+)*$"
DEFAULT_SLOS = {"ttft_p99_ms": 2000, "tpot_p99_ms": 200}


def slos_schema(*names: str) -> dict[str, Any]:
    """JSON schema of an `slos` param: positive milliseconds for the named p99 limits, nothing else."""
    return {
        "type": "object",
        "properties": {name: {"type": "number", "exclusiveMinimum": 0} for name in names},
        "additionalProperties": False,
    }


def dag_kwargs(*tags: str) -> dict[str, Any]:
    return {
        "start_date": pendulum.datetime(2026, 1, 1, tz="UTC"),
        "catchup": False,
        "max_active_runs": 1,
        "tags": ["accelbench", *tags],
    }


def default_regions() -> list[str]:
    """ACCELBENCH_REGIONS, read from the environment only (safe at parse time)."""
    return list(Settings.from_env().regions)


def cpu_instance_types() -> list[str]:
    """The CPU rows of the seed file the catalog DAG seeds from (ACCELBENCH_SEED_FILE or the shipped
    one): a file read, no database at parse time."""
    from accelbench.catalog.seed_file import load_seed

    return sorted(
        s.instance_type for s in load_seed(Settings.from_env().seed_file) if s.accelerator_type == "cpu"
    )
