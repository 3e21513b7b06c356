"""What a user asks for (UI form, REST, cron defaults), before any catalog or model lookup.

`CampaignRequest` is the one source of every campaign field's default, bounds, enum and description:
the campaign DAG's Params are generated from its JSON schema (`accelbench.airflow.campaign_params`),
and so is the params table of docs/reference/dag-params.md. In a field's `json_schema_extra`,
JSON-schema keywords reach the form's schema as they are (`uniqueItems`; `section`, the form's group;
an `items` pattern that the planner's guards also check); `form_default` is the form's default of a
field a request must name; `default_env` names the setting (`accelbench.config.Settings`) whose value,
read when the DAG file is parsed, is the form's default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PositiveFloat,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from accelbench.config import ENV_PREFIX, MODE_SETTING, env_name, read_variable
from accelbench.config import setting_default as field_default
from accelbench.core.modes import ExecutionMode
from accelbench.core.search_plan import MIN_P99_REQUESTS, SearchPlan, SearchVariable, smallest_cap
from accelbench.core.slos import SAMPLE_WARNING_REQUESTS, Slos
from accelbench.core.spec import POISSON, QUALITY_PROMPTS, QUALITY_QUESTIONS
from accelbench.core.workloads import DEFAULT_WORKLOAD, Workload, WorkloadName, profile
from accelbench.errors import ConfigError
from accelbench.quality import exact_answer_task as quality_task
from accelbench.runtime.version_rules import VERSION_PATTERN
from accelbench.sizing.fit import LOADGEN_MAX_IN_FLIGHT
from accelbench.tiers import all_tiers, runtimes
from accelbench.tiers import names as tier_names

Quantization = Literal["none", "int8", "int4"]
DeploymentMode = Literal["single", "distributed", "disaggregated", "data-parallel"]

MODEL_PATTERN = r"^[A-Za-z0-9/][A-Za-z0-9._/-]*$"  # a model id or a local path; nothing a shell reads
ModelName = Annotated[str, Field(min_length=1, max_length=200, pattern=MODEL_PATTERN)]
PATH_PATTERN = r"^[A-Za-z0-9/._][A-Za-z0-9._/+-]*$"  # a file path; nothing a shell reads
TRACE_PATTERN = r"^(s3://)?[A-Za-z0-9/._][A-Za-z0-9._/+-]*$"  # a worker path, an s3:// URI or a stored name
ENGINE_ARG_PATTERN = r"^[A-Za-z0-9_.,:=/+@-]+$"  # what an extra `vllm serve` argument may contain
SloName = Literal["ttft_p99_ms", "tpot_p99_ms", "e2el_p99_ms"]
# p99 limits in ms; E2EL ~ TTFT + (output tokens - 1) x TPOT at the default 128 output tokens.
DEFAULT_SLOS: dict[SloName, float] = {"ttft_p99_ms": 2000, "tpot_p99_ms": 200, "e2el_p99_ms": 30000}
DEFAULT_MODEL_SETTING = env_name("default_model")
CAMPAIGN_DEFAULTS_SETTING = env_name("campaign_defaults")

# Enforced by `_unique` below; the form refuses duplicates too.
_UNIQUE: dict[str, JsonValue] = {"uniqueItems": True}
_LOAD, _SEARCH, _ENGINE = "Load", "Load search", "Engine and SLOs"  # the form's sections (others: its first)
LoadMode = Literal["levels", "search"]
# CampaignRequest field -> the SearchPlan field it sets (a SearchPlan's error names the request's field).


def _registered_runtime(runtime: str) -> str:
    if runtime not in runtimes():
        raise ValueError(f"expected one of {', '.join(runtimes())}")
    return runtime


# A registered tier's server recipe; the form offers the built-in tiers' (a tier a test registers is checked
# all the same).
RuntimeName = Annotated[
    str, AfterValidator(_registered_runtime), WithJsonSchema({"enum": list(runtimes()), "type": "string"})
]


def _registered_tier(name: str) -> str:
    if name not in tier_names():
        raise ValueError(f"expected one of {', '.join(tier_names())}")
    return name


# A registered tier's name; the form offers the built-in tiers (one a test registers is checked all the same).
TierName = Annotated[
    str, AfterValidator(_registered_tier), WithJsonSchema({"enum": list(tier_names()), "type": "string"})
]
VersionText = Annotated[str, Field(pattern=VERSION_PATTERN)]
# The built-in tiers' older version fields (`Tier.version_field`), as the form's description names them.
_OLDER_VERSION_FIELDS = ", ".join(f"`{t.version_field}`" for t in all_tiers() if t.version_field)
SearchRule = Literal["interval", "point"]
SEARCH_CAP_FACTOR = 4  # the interval rule's default cap: 4 x search_min_requests per repeat
MAX_SEARCH_REQUESTS = 1_000_000
SEARCH_FIELDS = {
    "search_variable": "variable",
    "search_lower": "lower",
    "search_upper": "upper",
    "search_precision": "relative",
    "search_step": "step",
    "search_min_requests": "min_requests",
    "search_max_requests": "max_requests",
    "repeats": "repeats",
}


VARIANT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"  # a variant's name: a label in rows and tables
MAX_VARIANTS = 4
# What a variant may change; everything else (the workload: lengths, levels, prompts, repeats) it shares.
VARIANT_FIELDS = ("extra_engine_args", "model", "quantization", "versions", "instance_type")


class Variant(BaseModel):
    """One side of an A/B comparison (`CampaignRequest.variants`): a name, and what it changes of the
    campaign's configuration; a field left out is the campaign's. Two variants that change nothing are an
    A/A comparison: the host's self-check."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=40, pattern=VARIANT_NAME_PATTERN)
    extra_engine_args: list[Annotated[str, Field(pattern=ENGINE_ARG_PATTERN)]] | None = Field(
        default=None, description="Replaces the campaign's extra_engine_args for this variant"
    )
    model: ModelName | None = Field(default=None, description="Another checkpoint of the model")
    quantization: Quantization | None = None
    versions: dict[TierName, VersionText] | None = Field(
        default=None, description="Versions by tier, over the campaign's"
    )
    instance_type: str | None = Field(
        default=None, min_length=1, description="Another instance type, in place of the campaign's"
    )

    @model_validator(mode="before")
    @classmethod
    def _shares_the_workload(cls, data: Any) -> Any:
        """A field of the campaign's workload (or any other the variants share) is refused by name."""
        if isinstance(data, dict):
            shared = sorted(k for k in data if k != "name" and k not in VARIANT_FIELDS)
            if shared:
                raise ValueError(
                    f"{', '.join(shared)}: the variants share the campaign's workload and settings; a "
                    "variant "
                    f"may change only {', '.join(VARIANT_FIELDS)}"
                )
        return data


def _variants_schema() -> dict[str, Any]:
    """The form's schema of `variants`: an array of Variant objects, inline (a Param has no $defs)."""
    item = Variant.model_json_schema()
    item.pop("title", None)
    item.pop("description", None)
    for prop in item["properties"].values():
        prop.pop("title", None)
    return {"type": "array", "items": item, "maxItems": MAX_VARIANTS}


class CampaignRequest(BaseModel):
    """Fields mirror the DAG params; their names are what error messages cite."""

    model_config = ConfigDict(extra="forbid")
    # The trace workload as planning read it (`with_trace`): its lengths and identity; None: not read yet.
    _trace: Workload | None = PrivateAttr(default=None)

    instance_types: list[str] = Field(
        min_length=1,
        description="Instance types of the catalog, one server each, in any mix of tiers: Graviton3 or newer "
        "(Graviton2 lacks BF16), GPU (g5, g6, g6e, p5) and Neuron (inf2, trn1); each runs its tier's runtime",
        json_schema_extra={**_UNIQUE, "form_default": ["m8g.xlarge"]},
    )
    model: str = Field(
        min_length=1,
        max_length=200,
        pattern=MODEL_PATTERN,
        description="Model id in `ACCELBENCH_MODEL_STORE`, or a local path (local mode only; in kubernetes "
        "mode a store entry named by its id)",
        json_schema_extra={"default_env": DEFAULT_MODEL_SETTING},
    )
    model_revision: str | None = Field(
        default=None, description="The model's revision (branch, tag or commit)"
    )
    served_model_name: str | None = Field(
        default=None, description="The name the server serves the model under; empty: from the model id"
    )
    runtime: RuntimeName | None = Field(
        default=None,
        description="The server recipe; empty: each instance type's tier's (vllm-cpu, vllm-gpu, "
        "vllm-neuron). Set, every instance type must be of its tier",
    )
    versions: dict[TierName, VersionText] = Field(
        default_factory=dict,
        description='The runtime version of each tier, by tier (e.g. {"cpu": "0.19.1"}: the vllm-cpu '
        "image); a tier left out runs the newest version the catalog knew at the run's date. The older "
        f"fields {_OLDER_VERSION_FIELDS} are still accepted and mapped here",
    )
    dtype: str = Field(
        default="bfloat16",
        description="Weights and activations dtype; forced to bfloat16 on CPU (with a warning)",
    )
    quantization: Quantization = Field(
        default="none",
        description="int8/int4 = a compressed-tensors W8A8/W4A8 checkpoint",
    )
    quantized_models: list[ModelName] = Field(
        default_factory=list,
        max_length=4,
        description="A quantization matrix: quantized checkpoints of `model` (model-store ids or local "
        "paths), each served like it, one server per type and checkpoint; `model` is the reference (its "
        "bf16 checkpoint) that their quality is measured against after the load levels",
        json_schema_extra=_UNIQUE,
    )
    variants: Annotated[list[Variant], WithJsonSchema(_variants_schema())] = Field(
        default_factory=list,
        max_length=MAX_VARIANTS,
        description="An A/B comparison: two or more named variants of this configuration, each changing only "
        'what it names (e.g. [{"name": "a"}, {"name": "b", "extra_engine_args": ["--max-num-active-seqs", '
        '"2"]}]; two that change nothing: an A/A, the host\'s self-check), on one instance type and this '
        "workload. Their servers run interleaved in `rounds` (a, b, a, b ...); every later variant is "
        "compared "
        "with the first on each level and metric, as the regression gate compares versions",
    )
    rounds: int = Field(
        default=2,
        ge=1,
        le=20,
        description="An A/B comparison: rounds of its interleaved servers, each round one server of every "
        "variant; a variant's `repeats` of each level are split over its rounds (so at most `repeats`)",
    )
    quality_questions: int = Field(
        default=QUALITY_QUESTIONS,
        ge=4,
        le=5000,
        description="A quantization matrix: questions of the project's exact-answer task each configuration "
        "answers through lm-eval (more: a narrower accuracy interval)",
    )
    quality_prompts: int = Field(
        default=QUALITY_PROMPTS,
        ge=4,
        le=512,
        description="A quantization matrix: probe prompts whose top-20 next-token distributions each "
        "configuration is compared on, twice (more: narrower KL and top-1 intervals)",
    )
    max_campaign_usd: float | None = Field(
        default=None,
        gt=0,
        description="Refuse the plan when its estimate (each server's start-up and requests, priced "
        "on-demand; the plan task logs it) is above this many USD; empty: no limit",
    )
    kv_cache_dtype: Literal["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"] = Field(
        default="auto", description="KV-cache dtype (FP8 is refused on CPU)"
    )
    deployment_mode: DeploymentMode = Field(
        default="single", description="Only single: one server per instance, on one node"
    )
    tensor_parallel_size: int | None = Field(
        default=None,
        ge=1,
        description="Empty: one rank per NUMA node (CPU), per GPU (as many as the model's heads split over) "
        "or per NeuronCore",
    )
    gpu_memory_utilization: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="GPU types: the share of each GPU's memory vLLM may take (--gpu-memory-utilization); the "
        "planner checks the weights and one full-context sequence fit in it",
        json_schema_extra={"section": _ENGINE},
    )
    input_len: int = Field(
        default=512,
        ge=1,
        le=131072,
        description="Input length of the workload, in tokens",
        json_schema_extra={"section": _LOAD},
    )
    output_len: int = Field(
        default=128,
        ge=1,
        le=32768,
        description="Output length of the workload, in tokens",
        json_schema_extra={"section": _LOAD},
    )
    workloads: list[WorkloadName] = Field(
        default_factory=lambda: [DEFAULT_WORKLOAD],
        min_length=1,
        description="Workload profiles, one server each per instance type: fixed = random prompts of "
        "input_len/output_len on /v1/completions; chat (256±50% in, 128±50% out, chat template); summarise "
        "(1024±25% in, 128 out); shared-prefix (a 1024-token prefix shared by 4 prompt groups, 64 own "
        "tokens, 64 out); decode-heavy (64 in, 512 out); custom (custom_prompts, output_len out); trace (the "
        "timed trace `trace` replayed at each of time_scales)",
        json_schema_extra={**_UNIQUE, "section": _LOAD},
    )
    custom_prompts: str | None = Field(
        default=None,
        max_length=500,
        pattern=PATH_PATTERN,
        description='The custom workload\'s prompts: a JSONL file of {"prompt": ...} lines the load '
        "generator reads: a path on the worker, local mode only (a kubernetes benchmark pod cannot read it)",
        json_schema_extra={"section": _LOAD},
    )
    trace: str | None = Field(
        default=None,
        max_length=500,
        pattern=TRACE_PATTERN,
        description="The trace workload's timed trace (JSONL: timestamp, input_length, output_length, "
        "hash_ids; accelbench trace / the accelbench_make_trace DAG make one): a stored trace's name (the "
        "lake's traces/<name>.jsonl), an s3:// URI, or a path on the worker (local mode only: a kubernetes "
        "benchmark pod reads the lake's bucket)",
        json_schema_extra={"section": _LOAD},
    )
    time_scales: list[Annotated[float, Field(gt=0, le=1000)]] = Field(
        default_factory=lambda: [1.0],
        min_length=1,
        description="The trace workload's levels: the trace at each multiple of its recorded pace (1 = as "
        "recorded, 2 = twice as fast); every request of the trace each level",
        json_schema_extra={**_UNIQUE, "section": _LOAD},
    )
    level_warmups: int = Field(
        default=4,
        ge=0,
        le=1000,
        description="Warm-up requests before each level, not measured (at least the level's concurrency; "
        "0: none), so a level does not start with the previous level's state",
        json_schema_extra={"section": _LOAD},
    )
    concurrency: list[Annotated[int, Field(ge=1, le=LOADGEN_MAX_IN_FLIGHT)]] = Field(
        default_factory=lambda: [1, 4, 16],
        min_length=1,
        description=f"Concurrency levels (at most {LOADGEN_MAX_IN_FLIGHT:,}: the load generator's cap on "
        "requests in flight)",
        json_schema_extra={**_UNIQUE, "section": _LOAD},
    )
    load_mode: LoadMode = Field(
        default="levels",
        description="levels = measure the concurrency levels above; search = find each server's capacity "
        "under the SLOs (the largest load whose every repeat holds them: bracket, then bisect), with the "
        "search fields below (the levels are then not measured)",
        json_schema_extra={"section": _SEARCH},
    )
    search_variable: SearchVariable = Field(
        default="concurrency",
        description="What the search varies: concurrent requests, a Poisson request rate (requests/s), or "
        "the trace workload's time-scale (its headroom: how many times the recorded traffic holds the SLOs)",
        json_schema_extra={"section": _SEARCH},
    )
    search_lower: PositiveFloat = Field(
        default=1, description="The search's first and smallest load", json_schema_extra={"section": _SEARCH}
    )
    search_upper: PositiveFloat = Field(
        default=64,
        description=f"The largest load the search may probe (a concurrency at most "
        f"{LOADGEN_MAX_IN_FLIGHT:,})",
        json_schema_extra={"section": _SEARCH},
    )
    search_precision: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Stop when the bracket is narrower than this fraction of its passing load (0.1 = 10%); "
        "empty, and no step: one step for a concurrency, 10% for a request rate",
        json_schema_extra={"section": _SEARCH},
    )
    search_step: float | None = Field(
        default=None,
        gt=0,
        description="Or stop when the bracket is narrower than this load (a concurrency: a whole number)",
        json_schema_extra={"section": _SEARCH},
    )
    search_min_requests: int = Field(
        default=SAMPLE_WARNING_REQUESTS,
        ge=MIN_P99_REQUESTS,
        le=100000,
        description=f"Requests a probe's repeat must complete for its p99 to be trusted (prompts_per_level "
        f"must be at least this; below {SAMPLE_WARNING_REQUESTS:,} the report warns of the sample size)",
        json_schema_extra={"section": _SEARCH},
    )
    search_rule: SearchRule = Field(
        default="interval",
        description="interval = each probe judged on the 95% intervals of its p99s: a probe whose interval "
        "holds an SLO's limit is measured again at the same load (up to search_max_requests; then it counts "
        "as undecided, never as meeting), the capacity gets its interval and the search rechecks its first "
        "probe for drift; point = each repeat's p99s judged as measured (the rule before intervals: faster, "
        "but noise decides close probes)",
        json_schema_extra={"section": _SEARCH},
    )
    search_max_requests: int | None = Field(
        default=None,
        ge=MIN_P99_REQUESTS,
        le=MAX_SEARCH_REQUESTS,
        description=f"The interval rule: the most requests a repeat of an undecided probe grows to; empty: "
        f"{SEARCH_CAP_FACTOR} x search_min_requests, or more where a p99 needs it (each of a probe's looks "
        "is judged at 1 - 5% / its looks: 600 for probes of 100 requests)",
        json_schema_extra={"section": _SEARCH},
    )
    burstiness: PositiveFloat = Field(
        default=POISSON,
        description="Arrivals at a request rate (levels or a rate search): 1 = Poisson; above 1 more "
        "regular, below 1 burstier (gamma-distributed gaps, `vllm bench serve --burstiness`)",
        json_schema_extra={"section": _SEARCH},
    )
    request_rates: list[PositiveFloat] = Field(
        default_factory=list,
        description="Request-rate levels (requests/s), measured after the concurrency levels",
        json_schema_extra=_UNIQUE,
    )
    prompts_per_level: int = Field(
        default=200,
        ge=1,
        le=100000,
        description="Prompts sent at each level (a repeat). A p99 needs 368 of them for an upper bound at "
        "95% (fewer: every p99 verdict is undecided); more narrow a percentile's own sampling noise, not "
        "the host's",
        json_schema_extra={"section": _LOAD},
    )
    repeats: int = Field(
        default=2,
        ge=1,
        le=20,
        description="Repeats of every level: two or more give the run-to-run noise the reports and the "
        "regression gate compare with, and more narrow every interval (the t factor of a change between "
        "two versions: 4.3 at 2, 2.8 at 3, 2.3 at 5). The plan task's log and the report's 'How much to "
        "measure' say what these repeats resolve on this host",
        json_schema_extra={"section": _LOAD},
    )
    # Latency SLOs: reports pick the best level whose p99 holds them; the load generator counts
    # requests within them as goodput.
    slos: dict[SloName, PositiveFloat] = Field(
        default_factory=lambda: dict(DEFAULT_SLOS),
        description="Latency SLOs in ms: per-request goodput limits (`vllm bench serve --goodput`)",
        json_schema_extra={"section": _ENGINE},
    )
    seed: int = Field(default=0, description="Seed of the random dataset (each repeat adds its own)")
    extra_engine_args: list[str] = Field(
        default_factory=list,
        description="Extra `vllm serve` flags for every server (checked by the planner; GPU-only flags are "
        "refused when a CPU type is in the campaign)",
        # The planner's guards check the pattern too, reporting it with every other problem.
        json_schema_extra={"items": {"type": "string", "pattern": ENGINE_ARG_PATTERN}, "section": _ENGINE},
    )
    # Where the benchmarks run; None = ACCELBENCH_EXECUTION_MODE (checked here, used by the operator).
    execution_mode: ExecutionMode | None = Field(
        default=None,
        description="kubernetes = a benchmark pod per server on its tier's NodePool; local = a vLLM "
        "process on the worker (CPU; GPU types where the worker has an NVIDIA GPU and the CUDA vLLM "
        "environment)",
        json_schema_extra={"default_env": MODE_SETTING},
    )

    @model_validator(mode="before")
    @classmethod
    def _older_version_fields(cls, data: Any) -> Any:
        """A tier's older version field (`Tier.version_field`, e.g. `version`), as old DAG-run
        confs and the version campaign's matrices send it, mapped into `versions` (empty: left out). Both
        given and different, or not a version: refused, naming the older field."""
        if not isinstance(data, dict):
            return data
        older = {t.version_field: t.name for t in all_tiers() if t.version_field and t.version_field in data}
        if not older:
            return data
        data = dict(data)
        given = data.get("versions")
        versions = dict(given) if isinstance(given, dict) else {}
        for field_name, tier_name in older.items():
            value = data.pop(field_name)
            if value is None or value == "":
                continue
            # A ConfigError, not a ValueError: it names the older field, which the user sent.
            if not isinstance(value, str) or not re.fullmatch(VERSION_PATTERN, value):
                raise ConfigError(field_name, value, f"not a version (e.g. 0.19.1); see versions.{tier_name}")
            if versions.get(tier_name, value) != value:
                raise ConfigError(
                    field_name, value, f"versions.{tier_name} is {versions[tier_name]!r}: give one of them"
                )
            versions[tier_name] = value
        if given is None or isinstance(given, dict):
            data["versions"] = versions
        return data

    @property
    def version(self) -> str | None:
        """The version pinned for the tier whose older field was `version` (vLLM CPU: the version campaign's
        partition), None when unset."""
        return next((self.versions.get(t.name) for t in all_tiers() if t.version_field == "version"), None)

    def version_of(self, tier_name: str) -> str | None:
        """The version pinned for `tier_name` (None: the catalog's newest at the run's date)."""
        return self.versions.get(tier_name)

    @field_validator(
        "instance_types", "concurrency", "request_rates", "workloads", "quantized_models", "time_scales"
    )
    @classmethod
    def _unique(cls, values: list[Any]) -> list[Any]:
        """Duplicates would give two runs the same id (and the same lake files)."""
        if len(set(values)) != len(values):
            raise ValueError("lists each value more than once")
        return values

    @field_validator("variants")
    @classmethod
    def _a_comparison(cls, variants: list[Variant]) -> list[Variant]:
        """None, or two or more variants with names of their own (a name labels its rows and table lines)."""
        if len(variants) == 1:
            raise ValueError(
                "an A/B comparison needs two variants or more (two that change nothing: an A/A self-check)"
            )
        names = [v.name for v in variants]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"names each variant once: {', '.join(twice)} more than once")
        return variants

    def search_plan(self) -> SearchPlan | None:
        """The load search this request asks for (None: the fixed levels). The fields are checked together
        here, not by the form: a ConfigError names the request's field at fault (the planner reports it
        with every other problem)."""
        if self.load_mode != "search":
            return None
        if self.search_variable == "concurrency" and self.search_upper > LOADGEN_MAX_IN_FLIGHT:
            raise ConfigError(
                "search_upper",
                self.search_upper,
                f"above the load generator's cap of {LOADGEN_MAX_IN_FLIGHT:,} requests in flight",
            )
        time_scale = self.search_variable == "time_scale"
        if (time_scale and self.workloads != ["trace"]) or (not time_scale and "trace" in self.workloads):
            raise ConfigError(
                "search_variable",
                self.search_variable,
                "a trace's load is its time-scale, and a time-scale is a trace's: search time_scale with "
                "workloads=['trace'] alone",
            )
        if self.search_variable != "time_scale" and self.prompts_per_level < self.search_min_requests:
            raise ConfigError(
                "prompts_per_level",
                self.prompts_per_level,
                f"a search probe needs at least search_min_requests={self.search_min_requests} requests "
                "for a trusted p99",
            )
        values = {plan: getattr(self, name) for name, plan in SEARCH_FIELDS.items()}
        values["max_requests"] = self._search_cap()
        try:
            plan = SearchPlan(**values, slos=Slos(**self.slos))
        except ValidationError as exc:
            raise _search_error(exc) from None
        if self.search_variable != "time_scale" and (why := plan.unbounded(self.prompts_per_level)):
            raise ConfigError("search_max_requests", plan.max_requests, why)
        return plan

    def _search_cap(self) -> int | None:
        """The interval rule's cap on a repeat's requests (None: the point rule, which has none)."""
        if self.search_rule == "point":
            if self.search_max_requests is not None:
                raise ConfigError(
                    "search_max_requests",
                    self.search_max_requests,
                    "only the interval rule measures a probe again: leave it empty, or search_rule=interval",
                )
            return None
        if self.search_max_requests is not None:
            return self.search_max_requests
        # At least the smallest cap whose looks can bound a p99 (`smallest_cap`: 600 for 100-request probes).
        cap = max(SEARCH_CAP_FACTOR * self.search_min_requests, smallest_cap(self.prompts_per_level))
        return min(cap, MAX_SEARCH_REQUESTS)

    def with_trace(self, workload: Workload) -> CampaignRequest:
        """This request with its trace workload as planning read it (`workload_specs`, `context_len`)."""
        copy = self.model_copy()
        copy._trace = workload
        return copy

    def workload_specs(self) -> list[Workload | None]:
        """The workloads in order; None for `fixed`, which a LoadPlan's own lengths describe (its specs
        keep the ids they had before workloads existed)."""
        return [
            None
            if name == DEFAULT_WORKLOAD
            else self._trace
            if name == "trace" and self._trace is not None
            else profile(name, self.input_len, self.output_len, self.custom_prompts, self.trace)
            for name in self.workloads
        ]

    @property
    def context_len(self) -> int:
        """--max-model-len, one for every workload of the campaign (one server configuration) and a
        quantization matrix's quality task: the longest prompt + output of any, plus headroom because random
        prompts can re-tokenize a little longer than asked, and a prompt at the limit would cut the output
        short."""
        return self.context_len_of(self.workload_specs())

    def context_len_of(self, workloads: Iterable[Workload | None]) -> int:
        """`context_len` of these workloads (each with its headroom; a quantization matrix's quality task)."""
        needs = [
            (self.input_len, self.output_len) if w is None else (w.max_input_len, w.max_output_len)
            for w in workloads
        ]
        if self.quantized_models:  # the quality task's prompts go to the same server after the levels
            needs.append((quality_task.PROMPT_TOKENS, quality_task.MAX_GEN_TOKS))
        return max(i + o + max(64, i // 10) for i, o in needs)


def _search_error(exc: ValidationError) -> ConfigError:
    """SearchPlan's first error as the request's: its field (`upper` -> `search_upper`), value and words.
    A check across fields says "name=value: why" itself, in the plan's names."""
    to_request = {plan: name for name, plan in SEARCH_FIELDS.items()}
    err = exc.errors()[0]
    why = str(err["msg"]).removeprefix("Value error, ")
    if err["loc"]:
        name = str(err["loc"][0])
        return ConfigError(to_request.get(name, name), err.get("input"), why)
    first = why.split("; ")[0]
    named = re.match(r"(\w+)=([^:]*): (.*)", first)
    if named is None or (named[1] not in to_request and named[1] != "slos"):
        return ConfigError("load_mode", "search", why)
    field, value = to_request.get(named[1], named[1]), named[2]
    reason = re.sub(r"\b(\w+)=", lambda m: f"{to_request.get(m[1], m[1])}=", named[3])
    return ConfigError(field, float(value) if re.fullmatch(r"[0-9.e+-]+", value) else value, reason)


def field_extra(name: str) -> dict[str, Any]:
    """A field's `json_schema_extra` (an empty dict when it has none)."""
    extra = CampaignRequest.model_fields[name].json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def form_defaults(fields: Iterable[str] | None = None, from_env: bool = True) -> dict[str, Any]:
    """Every field's default as a form shows it: the model's default, else the field's `form_default` (a
    field a request must name: instance_types), else (`default_env`) the setting's value now, read from
    the environment alone (safe at parse time), and over them ACCELBENCH_CAMPAIGN_DEFAULTS
    (`default_overrides`). `from_env=False`: the settings' own defaults instead, no overrides.
    `fields`: only these, in this order (default: every field)."""
    out: dict[str, Any] = {}
    for name in CampaignRequest.model_fields if fields is None else fields:
        info = CampaignRequest.model_fields[name]
        extra = field_extra(name)
        out[name] = None if info.is_required() else info.get_default(call_default_factory=True)
        if "form_default" in extra:
            out[name] = extra["form_default"]
        if variable := extra.get("default_env"):
            out[name] = read_variable(variable) if from_env else setting_default(variable)
    if from_env:
        out |= {name: value for name, value in default_overrides().items() if name in out}
    return out


def default_overrides() -> dict[str, Any]:
    """ACCELBENCH_CAMPAIGN_DEFAULTS, read from the environment alone (safe at parse time): campaign fields
    over the form's defaults (empty: none). Only the shape is checked here, naming the setting; the form's
    schema and the planner check the values."""
    raw = str(read_variable(CAMPAIGN_DEFAULTS_SETTING)).strip()
    if not raw:
        return {}
    try:
        overrides = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(CAMPAIGN_DEFAULTS_SETTING, raw, f"not JSON ({exc})") from None
    if not isinstance(overrides, dict):
        raise ConfigError(CAMPAIGN_DEFAULTS_SETTING, raw, "a JSON object of campaign params")
    unknown = sorted(set(overrides) - set(CampaignRequest.model_fields))
    if unknown:
        raise ConfigError(CAMPAIGN_DEFAULTS_SETTING, raw, f"not a campaign param: {', '.join(unknown)}")
    return overrides


def setting_default(variable: str) -> Any:
    """The default of the setting named in full (ACCELBENCH_DEFAULT_MODEL -> its field's default)."""
    return field_default(variable.removeprefix(ENV_PREFIX).lower())
