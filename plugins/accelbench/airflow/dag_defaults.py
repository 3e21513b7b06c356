"""What every accelbench DAG shares: start date, concurrency, param patterns, default regions."""

from __future__ import annotations

import json
import os
from typing import Any

import pendulum

from accelbench.config import Settings
from accelbench.errors import ConfigError

REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d+$"
INSTANCE_TYPE_PATTERN = r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$"
MODEL_PATTERN = r"^[A-Za-z0-9/][A-Za-z0-9._/-]*$"  # a model id or a local path; nothing a shell reads
VERSION_PATTERN = r"^v?\d+\.\d+\.\d+([.-]?[A-Za-z0-9]+)*$"
# p99 limits in ms; E2EL ~ TTFT + (output tokens - 1) x TPOT at the default 128 output tokens.
DEFAULT_SLOS = {"ttft_p99_ms": 2000, "tpot_p99_ms": 200, "e2el_p99_ms": 30000}
VERSION_MATRIX_SETTING = "ACCELBENCH_VERSION_MATRIX"


def campaign_defaults() -> dict[str, Any]:
    """The campaign form's defaults: the weekly campaign's matrix, and the base of a version campaign's."""
    return {
        "instance_types": ["m8g.xlarge"],
        "model": os.environ.get("ACCELBENCH_DEFAULT_MODEL", "Qwen/Qwen2.5-0.5B-Instruct"),
        "dtype": "bfloat16",
        "quantization": "none",
        "concurrency": [1, 4, 16],
        "input_len": 512,
        "output_len": 128,
        "prompts_per_level": 200,
        "repeats": 2,
        "extra_engine_args": [],
        "slos": dict(DEFAULT_SLOS),
    }


def version_matrix() -> dict[str, Any]:
    """What a version campaign measures: the campaign defaults, overridden by the JSON object in
    ACCELBENCH_VERSION_MATRIX (the planner checks every field when the run starts)."""
    raw = os.environ.get(VERSION_MATRIX_SETTING, "").strip()
    if not raw:
        return campaign_defaults()
    try:
        overrides = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(VERSION_MATRIX_SETTING, raw, f"not JSON ({exc})") from None
    if not isinstance(overrides, dict) or "version" in overrides:
        raise ConfigError(VERSION_MATRIX_SETTING, raw, "a JSON object of campaign params, without version")
    return campaign_defaults() | overrides


def slos_schema(*names: str) -> dict[str, Any]:
    """JSON schema of an `slos` param: positive milliseconds for the named p99 limits, nothing else."""
    return {
        "type": "object",
        "properties": {name: {"type": "number", "exclusiveMinimum": 0} for name in names},
        "additionalProperties": False,
    }


def cpu_instance_type_items(instance_types: list[str]) -> dict[str, Any]:
    """JSON schema of one CPU instance type of the form: a catalog CPU row; a Graviton2 type is refused
    first, with the reason in the message (jsonschema prints the `not` schema, description included)."""
    from accelbench.core.families import GRAVITON2_FAMILIES, GRAVITON2_REASON

    graviton2 = "^(" + "|".join(sorted(GRAVITON2_FAMILIES)) + r")\."
    return {
        "type": "string",
        "allOf": [{"not": {"pattern": graviton2, "description": GRAVITON2_REASON}}, {"enum": instance_types}],
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
