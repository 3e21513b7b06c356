"""What every accelbench DAG shares: start date, concurrency, param patterns, default regions."""

from __future__ import annotations

from typing import Any

import pendulum

from accelbench.campaign.matrix import parse_version_matrix
from accelbench.campaign.request import DEFAULT_SLOS as DEFAULT_SLOS  # the report DAG's default too
from accelbench.campaign.request import MODEL_PATTERN as MODEL_PATTERN
from accelbench.campaign.request import form_defaults
from accelbench.config import Settings
from accelbench.runtime.version_rules import VERSION_PATTERN as VERSION_PATTERN  # a param pattern of the DAGs

REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d+$"
INSTANCE_TYPE_PATTERN = r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$"

# The CampaignRequest fields the campaign form shows, in its order (the others take the model's default).
CAMPAIGN_FORM_FIELDS = (
    "instance_types",
    "model",
    "versions",
    "dtype",
    "quantization",
    "quantized_models",
    "quality_questions",
    "quality_prompts",
    "workloads",
    "custom_prompts",
    "trace",
    "time_scales",
    "concurrency",
    "input_len",
    "output_len",
    "prompts_per_level",
    "repeats",
    "level_warmups",
    "load_mode",
    "search_variable",
    "search_lower",
    "search_upper",
    "search_precision",
    "search_step",
    "search_min_requests",
    "search_rule",
    "search_max_requests",
    "burstiness",
    "extra_engine_args",
    "variants",
    "rounds",
    "gpu_memory_utilization",
    "slos",
    "max_campaign_usd",
    "execution_mode",
)
# The CampaignRequest fields the campaign form hides, each with why. A run takes the model's default for them
# unless its conf names them (REST, `airflow dags trigger --conf`, ACCELBENCH_VERSION_MATRIX): Airflow passes
# conf keys the form does not declare through unchecked, and the plan task checks them with CampaignRequest.
# With CAMPAIGN_FORM_FIELDS, every field of CampaignRequest exactly once (the params page's generator
# refuses a field in neither, or in both).
FORM_HIDDEN_FIELDS: dict[str, str] = {
    "model_revision": "rarely set: empty serves the weights the model store or the local path holds (set, it "
    "is `vllm serve --revision`)",
    "served_model_name": "rarely set: empty serves the model under the last part of its id",
    "runtime": "empty follows each instance type's tier, which a campaign of several tiers needs; set, every "
    "instance type must be of the runtime's tier",
    "kv_cache_dtype": "one value for every server of a campaign, and FP8 is refused while any CPU type is in "
    "it; `auto` suits every tier",
    "deployment_mode": "only `single` plans (one server per instance type, on one node); the others are "
    "refused",
    "tensor_parallel_size": "empty lets the planner choose for each instance type (a rank per NUMA node, GPU "
    "or NeuronCore); a number set here applies to every instance type of the campaign",
    "request_rates": "fixed request-rate levels, measured after the concurrency levels; the form reaches "
    "request rates through the load search (`search_variable=request_rate`)",
    "seed": "fixed so that a rerun sends the same prompts (each repeat adds its own offset)",
}


def campaign_defaults() -> dict[str, Any]:
    """The weekly campaign's matrix, and the base of a version campaign's: the campaign form's defaults
    (CampaignRequest's, the environment's applied in `form_defaults`) without the per-run fields."""
    per_run = ("versions", "execution_mode")
    return form_defaults([name for name in CAMPAIGN_FORM_FIELDS if name not in per_run])


def version_matrix() -> dict[str, Any]:
    """What a version campaign measures: the campaign defaults, overridden by the JSON object in
    ACCELBENCH_VERSION_MATRIX (the planner checks every field when the run starts)."""
    return parse_version_matrix(
        Settings.from_env("version_matrix").releases.version_matrix, campaign_defaults()
    )


def slos_schema(*names: str) -> dict[str, Any]:
    """JSON schema of an `slos` param: positive milliseconds for the named p99 limits, nothing else."""
    return {
        "type": "object",
        "properties": {name: {"type": "number", "exclusiveMinimum": 0} for name in names},
        "additionalProperties": False,
    }


def instance_type_items(instance_types: list[str]) -> dict[str, Any]:
    """JSON schema of one instance type of the form: a catalog row (any tier); a Graviton2 type is refused
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


def timed(schedule: str) -> str | None:
    """A DAG's time schedule, or none where ACCELBENCH_SCHEDULES is false (the DAG then runs only when
    triggered): read from the environment only (safe at parse time)."""
    return schedule if Settings.from_env("schedules").airflow.schedules else None


def default_regions() -> list[str]:
    """ACCELBENCH_REGIONS, read from the environment only (safe at parse time)."""
    return list(Settings.from_env("regions").aws.regions)


def catalog_instance_types(tiers: tuple[str, ...] | None = None) -> list[str]:
    """The rows of these tiers (default: every registered tier) in the seed file the catalog DAG seeds from
    (ACCELBENCH_SEED_FILE or the shipped one): a file read, no database at parse time."""
    from accelbench.tiers import load_seed, names

    wanted = names() if tiers is None else tiers
    return sorted(
        s.instance_type
        for s in load_seed(Settings.from_env("seed_file").catalog.seed_file)
        if s.accelerator_type in wanted
    )
