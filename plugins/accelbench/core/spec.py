"""The unit of work, typed and JSON-serialisable: BenchmarkSpec = ServerSpec + LoadPlan."""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from accelbench.core.search_plan import SearchPlan
from accelbench.core.workloads import DEFAULT_WORKLOAD, Workload

GoodputMetric = Literal["ttft", "tpot", "e2el"]  # vllm bench serve --goodput names
POISSON = 1.0  # the burstiness of Poisson arrivals


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TierServerFields(_Frozen):
    """What a tier's servers carry beyond every server's fields (the GPU memory share, the Neuron compiled
    batch). Each tier declares its subclass (accelbench.tiers: `Tier.server_model`), which the registry
    records here, below the tiers, so that a ServerSpec read from JSON gets its tier's type back."""

    def engine_args(self) -> list[str]:
        """The `vllm serve` flags these fields set (the tier's recipe puts them after the common ones)."""
        return []


# accelerator_type -> its tier's server fields (accelbench.tiers.register fills it); a tier absent: none.
_TIER_FIELDS: dict[str, type[TierServerFields]] = {}
# The tiers register their models when the registry is imported; core sits below the tiers, so a spec of a
# tier not registered yet (read in a process that imported no tier) imports the registry by name once.
_REGISTRY = "accelbench.tiers"


def _tier_model(tier: str) -> type[TierServerFields]:
    if tier not in _TIER_FIELDS and _REGISTRY not in sys.modules:
        importlib.import_module(_REGISTRY)
    return _TIER_FIELDS.get(tier, TierServerFields)


def register_tier_fields(tier: str, model: type[TierServerFields] | None) -> None:
    """Record (or, with None, forget) the server fields of the tier named `tier`."""
    if model is None:
        _TIER_FIELDS.pop(tier, None)
    else:
        _TIER_FIELDS[tier] = model


class ServerSpec(_Frozen):
    """One inference server: everything that decides how it is launched."""

    runtime: str  # a tier's server recipe (accelbench.tiers: the planner checks it against the registry)
    version: str
    image: str
    image_digest: str | None = None
    model: str
    # The model's id when `model` is a local folder (accelbench.core.model_origin.model_identity): what the
    # lake rows name the model by, the same from any checkout or machine; `model` stays the folder served.
    # None: `model` is the id (or a spec planned before the field existed; the ingest resolves it then).
    model_id: str | None = None
    model_revision: str | None = None
    # Where the server streams the weights from (`s3://bucket/prefix/<model id>`, ACCELBENCH_WEIGHTS_URI: the
    # recipe's `--load-format runai_streamer`); None: the model's id (the Hub) or folder. Not in the matrix
    # key: where the weights come from changes the start-up, not what is measured.
    weights_uri: str | None = None
    served_model_name: str
    dtype: str
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = Field(ge=1)
    kv_cache_gib: int = Field(ge=0)
    max_model_len: int = Field(ge=1)
    instance_type: str
    accelerator_type: str  # a registered tier's name (accelbench.tiers)
    accelerator_count: int = Field(ge=0)
    vcpu: int = Field(ge=1)
    server_cpu: int = Field(ge=1)
    server_memory_mib: int = Field(ge=1)  # the container's memory request = limit
    model_weights_gib: float = Field(ge=0)
    extra_engine_args: tuple[str, ...] = ()
    # The fields only this server's tier has, of its tier's type (accelbench.tiers: Tier.server_model). In
    # JSON they are flat keys of the server, where they were before they moved here.
    tier_fields: SerializeAsAny[TierServerFields] = TierServerFields()

    @model_serializer(mode="wrap")
    def _flat_tier_fields(self, handler: SerializerFunctionWrapHandler, _: SerializationInfo) -> Any:
        """The tier's fields flat and the unset ones (and an unset model id) left out: a server dumps as
        before those fields existed or moved, so its spec_id and matrix_key stay."""
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for unset in ("model_id", "weights_uri"):  # as before the fields existed: the same spec_id
            if data.get(unset) is None:
                data.pop(unset, None)
        tier_fields = data.pop("tier_fields", None) or {}
        data.update({k: v for k, v in tier_fields.items() if v is not None})
        return data

    @model_validator(mode="before")
    @classmethod
    def _lift_tier_fields(cls, data: Any) -> Any:
        """The flat keys of the server's tier fields (JSON, old specs, keyword arguments) into its tier's
        type; a tier with no fields of its own gets the empty base."""
        if not isinstance(data, dict) or isinstance(data.get("tier_fields"), TierServerFields):
            return data
        model = _tier_model(str(data.get("accelerator_type")))
        data = dict(data)
        given = data.pop("tier_fields", None) or {}
        lifted = {name: data.pop(name) for name in model.model_fields if name in data}
        data["tier_fields"] = model.model_validate({**given, **lifted})
        return data

    @model_validator(mode="before")
    @classmethod
    def _legacy_memory(cls, data: Any) -> Any:
        """Specs recorded before MiB sizing (evidence already in the lake) said server_memory_gib."""
        if isinstance(data, dict) and "server_memory_gib" in data and "server_memory_mib" not in data:
            data = dict(data)
            data["server_memory_mib"] = round(float(data.pop("server_memory_gib")) * 1024)
        return data


class LoadPlan(_Frozen):
    """The load levels one server is driven through: the fixed levels (`concurrency`, `request_rates`),
    or with `search` a load search (accelbench.search) that chooses them, each probe a level of
    `prompts_per_level` requests, repeated `repeats` times (the search plan's repeats, the same number)."""

    input_len: int = Field(ge=1)
    output_len: int = Field(ge=1)
    range_ratio: float = Field(default=0.0, ge=0.0, le=1.0)
    seed: int = 0
    concurrency: tuple[int, ...] = ()
    request_rates: tuple[float, ...] = ()
    # A trace workload's levels: the trace at each multiple of its recorded pace (its every request, each
    # level: `prompts_per_level` is the trace's count); the other workloads' plans have none.
    time_scales: tuple[float, ...] = ()
    prompts_per_level: int = Field(default=200, ge=1)
    # Request-rate levels' arrivals: gamma-distributed gaps of this shape (vllm bench serve --burstiness):
    # 1 = Poisson, above 1 more regular, below 1 burstier.
    burstiness: float = Field(default=POISSON, gt=0)
    warmups: int = Field(default=4, ge=0)  # once per server, before the first level
    # Before each level's first repeat, at the level's own load and not measured: a `vllm bench serve` run
    # of its own before the level's first server scrape (`Driver.warm_up_level`; not `--num-warmups`, which
    # would run inside the measured window). At least this many, and at least the level's concurrency so its
    # batch is full before measuring.
    level_warmups: int = Field(default=0, ge=0)
    workload: Workload | None = None  # None: `random` prompts of input_len/output_len (the `fixed` profile)
    repeats: int = Field(default=1, ge=1)
    # Per-request latency limits in ms for vLLM's goodput (`--goodput ttft:500 tpot:50`).
    goodput_slos_ms: dict[GoodputMetric, float] = Field(default_factory=dict)
    search: SearchPlan | None = None  # None: the fixed levels

    @model_validator(mode="after")
    def _search_or_levels(self) -> LoadPlan:
        plan = self.search
        if plan is None:
            return self
        problems = []
        if self.concurrency or self.request_rates or self.time_scales:
            problems.append("a search chooses its own loads: give it no concurrency levels or request rates")
        if self.repeats != plan.repeats:
            problems.append(f"repeats={self.repeats}: the search repeats each probe {plan.repeats} times")
        if self.prompts_per_level < plan.min_requests:
            problems.append(
                f"prompts_per_level={self.prompts_per_level}: below the search's min_requests="
                f"{plan.min_requests}, no probe's p99 would be trusted"
            )
        elif why := plan.unbounded(self.prompts_per_level):
            problems.append(f"max_requests={plan.max_requests}: {why}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_serializer(mode="wrap")
    def _without_no_search(self, handler: SerializerFunctionWrapHandler, _: SerializationInfo) -> Any:
        """A plan without a search, workload or per-level warm-up and with Poisson arrivals dumps as before
        those fields existed: its spec_id and matrix_key stay."""
        data = handler(self)
        if isinstance(data, dict) and data.get("search") is None:
            data.pop("search", None)
        if isinstance(data, dict) and data.get("burstiness") == POISSON:
            data.pop("burstiness", None)
        for name in ("level_warmups", "workload", "time_scales"):  # unset: as before they existed
            if isinstance(data, dict) and not data.get(name):
                data.pop(name, None)
        return data

    @property
    def runs(self) -> Workload:
        """The workload the load generator runs: `workload`, or the `fixed` profile of the plan's lengths."""
        if self.workload is not None:
            return self.workload
        return Workload(
            name=DEFAULT_WORKLOAD,
            input_len=self.input_len,
            output_len=self.output_len,
            range_ratio=self.range_ratio,
        )

    def level_warmup_count(self, concurrency: int | None) -> int:
        """The warm-up requests before a level: `level_warmups`, raised to the level's concurrency."""
        return max(self.level_warmups, concurrency or 0) if self.level_warmups else 0

    @property
    def max_concurrency(self) -> int:
        """The most requests in flight the plan asks for (a concurrency search's upper bound)."""
        if self.search is not None and self.search.variable == "concurrency":
            return int(self.search.upper)  # no fixed levels beside a search
        return max(self.concurrency, default=1)


# A quality plan's defaults (the campaign request's too): probe prompts whose next-token distributions are
# compared, and questions of the exact-answer task.
QUALITY_PROMPTS, QUALITY_QUESTIONS = 48, 200


class QualityPlan(_Frozen):
    """After its load levels, a configuration's quality measured against its running server
    (accelbench.loadgen.quality_step): the top-k next-token distributions over the project's probe prompts
    (accelbench.quality.probe_prompts), and its accuracy on the project's exact-answer task through lm-eval
    (accelbench.quality.exact_answer_task). `reference`: the model id of the configuration the others are
    compared with (the bf16 checkpoint of a quantization matrix); it measures the same, and its two passes
    over the prompts give the noise floor its divergence is read against."""

    reference: str
    prompts: int = Field(default=QUALITY_PROMPTS, ge=1, le=512)
    questions: int = Field(default=QUALITY_QUESTIONS, ge=4, le=5000)


class VariantRound(_Frozen):
    """A server of an A/B comparison (the request's `variants`): which variant it serves, of which
    comparison (the variants' names in order, "a vs b": the first is the baseline), and which round of the
    interleaved servers it is (A, B, A, B ...: each round runs every variant once, so host drift falls on
    all). Its level repeats are numbered on from `first_repeat`, so the rounds of a variant are one point's
    repeats with distinct run ids and repeat numbers. Not part of the matrix key (the server and load are)."""

    comparison: str = Field(min_length=1)
    name: str = Field(min_length=1)
    round: int = Field(ge=0)
    rounds: int = Field(ge=1)
    first_repeat: int = Field(default=0, ge=0)


class BenchmarkSpec(_Frozen):
    server: ServerSpec
    load: LoadPlan
    campaign_id: str
    quality: QualityPlan | None = None  # None: the load levels only
    variant: VariantRound | None = None  # None: no A/B comparison

    @model_serializer(mode="wrap")
    def _without_no_quality(self, handler: SerializerFunctionWrapHandler, _: SerializationInfo) -> Any:
        """A spec without a quality plan or a variant dumps as before the fields existed: its spec_id
        stays."""
        data = handler(self)
        for name in ("quality", "variant"):
            if isinstance(data, dict) and data.get(name) is None:
                data.pop(name, None)
        return data

    @property
    def first_repeat(self) -> int:
        """The number of the levels' first repeat: 0, or an A/B round's (`VariantRound.first_repeat`)."""
        return self.variant.first_repeat if self.variant is not None else 0

    @property
    def spec_id(self) -> str:
        """Deterministic id: the same server + load in the same campaign always has the same id."""
        digest = hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:12]
        return f"{self.server.instance_type.replace('.', '-')}-{digest}"

    @property
    def matrix_key(self) -> str:
        """The same server + load in any campaign: "already measured with this matrix" compares it.

        The image digest is left out: a version measured before its digest was known is the same
        matrix point once the catalog records it. A model served from a folder is keyed by its id, not the
        folder's path: the same model from another checkout or machine is the same point; a trace by its
        content (its sha256 and figures), not where it was read."""
        server = self.server.model_dump(mode="json", exclude={"image_digest", "weights_uri"})
        if "model_id" in server:
            server["model"] = server.pop("model_id")
        load = self.load.model_dump(mode="json")
        if (workload := load.get("workload")) and workload.get("trace"):  # by its content, not its place
            workload.pop("path", None)
            workload["trace"].pop("uri", None)
        text = json.dumps({"server": server, "load": load}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]
