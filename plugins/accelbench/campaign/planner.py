"""Turn a CampaignRequest into BenchmarkSpecs, or refuse it with every problem at once."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from accelbench.campaign import guards
from accelbench.campaign.problems import PlanningError, Problem, problems_from_validation
from accelbench.campaign.request import CampaignRequest, SloName
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.core.families import CPU_FAMILIES, NEURON_CORES_PER_DEVICE, TIER_RUNTIME, refuse_graviton2
from accelbench.core.search import SearchPlan
from accelbench.core.spec import BenchmarkSpec, GoodputMetric, LoadPlan, ServerSpec
from accelbench.core.workloads import DEFAULT_WORKLOAD, Workload
from accelbench.errors import ConfigError
from accelbench.runtime.recipes import CPU_DTYPE, recipe_for
from accelbench.sizing.accelerator import (
    AcceleratorFit,
    largest_tensor_parallel,
    plan_accelerator_fit,
    tensor_parallel_divides,
)
from accelbench.sizing.accelerator import kv_cache_gib as accelerator_kv_gib
from accelbench.sizing.fit import GIB, FitPlan, NodeBudget, loadgen_memory_mib, plan_fit
from accelbench.sizing.model_config import ModelShape, load_model_shape

log = logging.getLogger(__name__)


@dataclass
class Plan:
    specs: list[BenchmarkSpec]
    fits: dict[str, FitPlan] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def served_name(req: CampaignRequest) -> str:
    """Set once, used by the server (--served-model-name) and by the load generator."""
    if req.served_model_name:
        return req.served_model_name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", req.model.rstrip("/").split("/")[-1]).strip("-") or "model"


# CampaignRequest.slos key -> the goodput metric it limits
_GOODPUT_METRIC: dict[SloName, GoodputMetric] = {
    "ttft_p99_ms": "ttft",
    "tpot_p99_ms": "tpot",
    "e2el_p99_ms": "e2el",
}


def tier_runtime(req: CampaignRequest, inst: InstanceSpec) -> str:
    """The runtime of one instance type: the request's, else its tier's."""
    return req.runtime or TIER_RUNTIME[inst.accelerator_type]


def _instance_problems(
    req: CampaignRequest, index: int, name: str, catalog: Mapping[str, InstanceSpec]
) -> tuple[InstanceSpec | None, list[Problem]]:
    where = f"instance_types[{index}]"
    try:
        refuse_graviton2(name, where)
    except ConfigError as exc:
        return None, [Problem(where, name, str(exc).split(": ", 1)[1])]
    inst = catalog.get(name)
    if inst is None:
        return None, [Problem(where, name, "not in the instance catalog (run accelbench_instance_catalog)")]
    recipe = recipe_for(tier_runtime(req, inst))
    if inst.accelerator_type != recipe.accelerator_type:
        return inst, [
            Problem(
                where,
                name,
                f"is a {inst.accelerator_type} instance; runtime {recipe.runtime} "
                f"needs a {recipe.accelerator_type} instance (leave runtime empty: each type runs its tier's "
                "runtime)",
            )
        ]
    if inst.accelerator_type != "cpu" and inst.accelerator_memory_gib <= 0:
        return inst, [Problem(where, name, "the catalog row gives no accelerator memory to plan against")]
    return inst, []


def _tensor_parallel(
    req: CampaignRequest, inst: InstanceSpec, shape: ModelShape | None, warnings: list[str]
) -> tuple[int, list[Problem]]:
    """Ranks: CPU one per NUMA node; GPU one per GPU, as many as the model's heads split over; Neuron one per
    NeuronCore. A rank count the request sets is checked against the same limits."""
    if inst.accelerator_type == "cpu":
        limit, unit = inst.numa_nodes, "NUMA node(s)"
    elif inst.accelerator_type == "neuron":
        limit, unit = inst.accelerator_count * NEURON_CORES_PER_DEVICE[inst.family], "NeuronCores"
    else:
        limit, unit = inst.accelerator_count, "GPUs"
    tp = req.tensor_parallel_size or limit
    if tp > limit:
        return tp, [
            Problem(
                "tensor_parallel_size",
                tp,
                f"greater than the {limit} {unit} of {inst.instance_type}"
                + ("; on CPU each rank is a NUMA node" if inst.accelerator_type == "cpu" else ""),
            )
        ]
    if inst.accelerator_type != "gpu" or shape is None or tensor_parallel_divides(shape, tp):
        return tp, []
    if req.tensor_parallel_size:
        return tp, [
            Problem(
                "tensor_parallel_size",
                tp,
                f"{req.model}'s {shape.num_heads} attention heads ({shape.num_kv_heads} KV heads) do not "
                f"split over {tp} ranks; {largest_tensor_parallel(shape, limit)} do on {inst.instance_type}",
            )
        ]
    fitted = largest_tensor_parallel(shape, limit)
    warnings.append(
        f"{inst.instance_type}: tensor parallel {fitted} of its {limit} GPUs: {req.model}'s "
        f"{shape.num_heads} attention heads ({shape.num_kv_heads} KV heads) do not split over {limit} (the "
        "pod still takes the node, and the report prices the node)"
    )
    return fitted, []


def neuron_batch(req: CampaignRequest, load: LoadPlan) -> tuple[int, list[Problem]]:
    """--max-num-seqs of a Neuron server, which is compiled for it: the plan's most requests in flight."""
    if load.search is not None and load.search.variable != "concurrency":
        return 1, [
            Problem(
                "search_variable",
                load.search.variable,
                "a Neuron server is compiled for a fixed batch (--max-num-seqs), taken from the most "
                "requests in flight: search over concurrency on Neuron types",
            )
        ]
    return load.max_concurrency, []


def _accelerator_fit(
    req: CampaignRequest, shape: ModelShape, inst: InstanceSpec, tp: int, concurrency: int
) -> AcceleratorFit:
    return plan_accelerator_fit(
        shape,
        tier=inst.accelerator_type,
        devices=inst.accelerator_count,
        memory_per_device_gib=inst.accelerator_memory_gib,
        tensor_parallel_size=tp,
        context_len=req.context_len,
        concurrency=concurrency,
        gpu_memory_utilization=req.gpu_memory_utilization,
        kv_cache_dtype=req.kv_cache_dtype,
    )


def _accelerator_refusal(req: CampaignRequest, fit: AcceleratorFit, concurrency: int) -> str:
    if fit.tier == "gpu":
        need = f"one full-context sequence ({req.context_len} tokens) needs {fit.kv_needed_gib:.2f} GiB"
        advice = "raise gpu_memory_utilization, shorten the workload, or use a type with more GPU memory"
    else:
        need = (
            f"the KV cache of {concurrency} sequences (--max-num-seqs) of {req.context_len} tokens needs "
            f"{fit.kv_needed_gib:.2f} GiB"
        )
        advice = "lower the largest concurrency, shorten the workload, or use a type with more Neuron devices"
    return (
        f"{req.model} does not fit: {fit.describe()}; {need}: short by {fit.shortfall_gib:.2f} GiB. {advice}"
    )


def node_budget(inst: InstanceSpec, load: LoadPlan) -> NodeBudget:
    """What the server container gets on a Karpenter node of this type (the catalog row has max_pods)."""
    if inst.max_pods is None:
        raise ValueError(f"{inst.instance_type}: the catalog row has no max_pods")
    return NodeBudget.for_instance(
        memory_gib=inst.memory_gib,
        vcpu=inst.vcpu,
        architecture=inst.architecture,
        max_pods=inst.max_pods,
        loadgen_mib=loadgen_memory(load),
        accelerator_type=inst.accelerator_type,
    )


def loadgen_memory(load: LoadPlan) -> int:
    return loadgen_memory_mib(load.prompts_per_level, load.input_len, load.output_len, load.range_ratio)


def _fit(
    shape: ModelShape, inst: InstanceSpec, budget: NodeBudget, tp: int, load: LoadPlan, context_len: int
) -> FitPlan:
    return plan_fit(
        shape,
        budget=budget,
        vcpu=inst.vcpu,
        numa_nodes=inst.numa_nodes,
        tensor_parallel_size=tp,
        generation=inst.generation,
        context_len=context_len,
        concurrency=load.max_concurrency,
    )


def _smallest_fit(
    shape: ModelShape, catalog: Mapping[str, InstanceSpec], load: LoadPlan, context_len: int
) -> str:
    """The refusal's advice: the smallest CPU type of the catalog (by memory, then vCPUs) the model fits."""
    for inst in sorted(catalog.values(), key=lambda i: (i.memory_gib, i.vcpu, i.instance_type)):
        if inst.accelerator_type != "cpu" or inst.max_pods is None or inst.family not in CPU_FAMILIES:
            continue
        budget = node_budget(inst, load)
        if budget.server_cpu >= 1 and _fit(shape, inst, budget, inst.numa_nodes, load, context_len).fits:
            return f"The smallest catalog type it fits is {inst.instance_type} ({inst.memory_gib:g} GiB)."
    return "No CPU type of the catalog fits it: use a quantized checkpoint or a GPU/Neuron tier."


def _load_of(req: CampaignRequest, sized: LoadPlan, workload: Workload | None) -> LoadPlan:
    """The load plan of one workload: the sized plan's levels and settings with the workload's lengths."""
    lengths: dict[str, Any] = {"input_len": req.input_len, "output_len": req.output_len, "range_ratio": 0.0}
    if workload is not None:
        lengths = {"input_len": workload.input_len, "output_len": workload.output_len}
        lengths |= {"range_ratio": workload.range_ratio, "workload": workload}
    return LoadPlan.model_validate(sized.model_dump() | lengths)


def parse_request(params: Mapping[str, object]) -> CampaignRequest:
    """DAG params -> CampaignRequest; every invalid field becomes a Problem."""
    try:
        return CampaignRequest.model_validate(dict(params))
    except ValidationError as exc:
        raise PlanningError(problems_from_validation(exc)) from None


@dataclass(frozen=True)
class RuntimeBuild:
    """The server build a runtime runs in one campaign: its version, and the image and digest release
    discovery recorded for it (the Neuron image's tag cannot be computed from the version)."""

    version: str
    image: str | None = None
    digest: str | None = None


def plan_campaign(
    req: CampaignRequest,
    catalog: Mapping[str, InstanceSpec],
    version: str,
    campaign_id: str,
    load_shape: Callable[[str], ModelShape] = load_model_shape,
    image_digest: str | None = None,
    preflight: Sequence[Problem] = (),
    builds: Mapping[str, RuntimeBuild] | None = None,
    unavailable: Collection[str] = (),
) -> Plan:
    """All guards run; a PlanningError lists every problem, each naming its field and value.

    Each instance type runs its tier's runtime (or the request's), at its build in `builds`, else at
    `version` (with `image_digest`); a type whose runtime is `unavailable` is left out (the caller found no
    build of it and said why in `preflight`). `preflight`: problems of the execution environment found by
    the caller (kubernetes mode's lake, image, connection), reported with the campaign's own."""
    problems: list[Problem] = [*preflight, *guards.check_engine_args(req)]
    plan = Plan(specs=[])
    instances: list[tuple[int, str, InstanceSpec]] = []
    for i, name in enumerate(req.instance_types):
        inst, found = _instance_problems(req, i, name, catalog)
        problems += found
        if inst is not None and not found:
            instances.append((i, name, inst))
    tiers: set[str] = {recipe_for(req.runtime).accelerator_type} if req.runtime else set()
    tiers |= {inst.accelerator_type for _, _, inst in instances}
    cpu_types = [name for _, name, inst in instances if inst.accelerator_type == "cpu"]
    problems += guards.check_deployment(req, "cpu" in tiers)
    if "cpu" in tiers:
        problems += guards.check_cpu_request(req, cpu_types)
    shape: ModelShape | None = None
    try:
        shape = load_shape(req.model)
    except ConfigError as exc:
        problems.append(Problem("model", req.model, str(exc).split(": ", 1)[-1]))
    if shape is not None and "cpu" in tiers:
        problems += guards.check_cpu_model(req, shape, plan.warnings)
    workloads = req.workload_specs()
    if shape is not None and 0 < shape.max_position_embeddings < req.context_len:
        named = req.workloads != [DEFAULT_WORKLOAD]
        problems.append(
            Problem(
                "workloads" if named else "input_len",
                req.workloads if named else req.input_len,
                f"the longest prompt + output (+ headroom) = "
                f"{req.context_len} tokens exceeds {req.model}'s context of "
                f"{shape.max_position_embeddings}",
            )
        )
    for w in workloads:
        if w is not None and w.dataset == "custom" and not (w.path and Path(w.path).is_file()):
            problems.append(
                Problem("custom_prompts", req.custom_prompts, "the custom workload needs a JSONL file here")
            )
    search: SearchPlan | None = None
    try:
        search = req.search_plan()
    except ConfigError as exc:
        problems.append(Problem(exc.field, exc.value, str(exc).split(": ", 1)[1]))
    if search is not None:
        log.info("load search: %s in [%g, %g], %s", search.variable, search.lower, search.upper, search.slos)
    # One server configuration for every workload: sized for the longest prompts and outputs of any.
    longest = [w for w in workloads if w is not None]
    load = LoadPlan(
        input_len=max([req.input_len, *(w.max_input_len for w in longest)]),
        output_len=max([req.output_len, *(w.max_output_len for w in longest)]),
        seed=req.seed,
        level_warmups=req.level_warmups,
        # A search chooses its own loads: the fixed levels are not measured.
        concurrency=() if search else tuple(req.concurrency),
        request_rates=() if search else tuple(req.request_rates),
        burstiness=req.burstiness,
        search=search,
        prompts_per_level=req.prompts_per_level,
        repeats=req.repeats,
        goodput_slos_ms={_GOODPUT_METRIC[k]: v for k, v in req.slos.items()},
    )
    batch, batch_problems = neuron_batch(req, load)
    if "neuron" in tiers:
        problems += batch_problems
    for i, name, inst in instances:
        where = f"instance_types[{i}]"
        recipe = recipe_for(tier_runtime(req, inst))
        tier = inst.accelerator_type
        if recipe.runtime in unavailable:
            continue  # the caller found no build of it here and said why in `preflight`
        build = (builds or {}).get(recipe.runtime) or RuntimeBuild(version, digest=image_digest)
        tp, tp_problems = _tensor_parallel(req, inst, shape, plan.warnings)
        problems += tp_problems
        if inst.max_pods is None:
            problems.append(
                Problem(
                    where,
                    name,
                    "the catalog row has no max_pods (it predates catalog revision 0003), so the node's "
                    "kube-reserved memory is unknown: run accelbench_instance_catalog to re-seed it",
                )
            )
            continue
        budget = node_budget(inst, load)
        if budget.server_cpu < 1 or budget.server_memory_mib < 1024:
            problems.append(
                Problem(
                    where,
                    name,
                    f"too small for a benchmark pod ({inst.vcpu} vCPU, {inst.memory_gib:g} GiB): after "
                    f"Karpenter's reserves, the DaemonSets and the load generator (1 core, "
                    f"{budget.loadgen_mib / 1024:.2f} GiB for this load plan), the server would get "
                    f"{budget.server_cpu} core(s) and {budget.server_memory_gib:.2f} GiB; it needs at least "
                    "1 core and 1 GiB",
                )
            )
            continue
        try:
            image = recipe.image(build.version, build.image)
        except ConfigError as exc:
            problems.append(Problem(exc.field, exc.value, exc.why))
            continue
        if unsupported := recipe.support_problem(inst.family, build.version):
            problems.append(Problem(where, name, unsupported))
            continue
        if shape is None or tp_problems:
            continue
        if tier == "cpu":
            fit = _fit(shape, inst, budget, tp, load, req.context_len)
            plan.fits[name] = fit
            if not fit.fits:
                problems.append(
                    Problem(
                        where,
                        name,
                        f"{req.model} does not fit: {fit.describe()}; it needs at least "
                        f"{fit.needed_gib:.2f} GiB with {fit.min_kv_gib:.1f} GiB of KV cache for one "
                        f"full-context sequence: short by {fit.shortfall_gib:.2f} GiB. "
                        + _smallest_fit(shape, catalog, load, req.context_len),
                    )
                )
                continue
            plan.warnings += [f"{name}: {w}" for w in fit.warnings]
            log.info("%s: %s. %s", name, fit.describe(), fit.advisory)
            kv_gib = fit.kv_cache_gib
        else:
            concurrency = batch if tier == "neuron" else load.max_concurrency
            accel = _accelerator_fit(req, shape, inst, tp, concurrency)
            if not accel.fits:
                problems.append(Problem(where, name, _accelerator_refusal(req, accel, concurrency)))
                continue
            plan.warnings += [f"{name}: {w}" for w in accel.warnings]
            log.info("%s: %s", name, accel.describe())
            kv_gib = accelerator_kv_gib(accel)
        server = ServerSpec(
            runtime=recipe.runtime,
            version=build.version,
            image=image,
            image_digest=build.digest,
            model=req.model,
            model_revision=req.model_revision,
            served_model_name=served_name(req),
            dtype=CPU_DTYPE if tier == "cpu" else req.dtype,
            quantization=shape.quantization.method if shape.quantization else None,
            kv_cache_dtype=req.kv_cache_dtype,
            tensor_parallel_size=tp,
            kv_cache_gib=kv_gib,
            max_model_len=req.context_len,
            instance_type=name,
            accelerator_type=recipe.accelerator_type,  # = inst.accelerator_type: _instance_problems
            accelerator_count=inst.accelerator_count,
            vcpu=inst.vcpu,
            server_cpu=budget.server_cpu,
            server_memory_mib=budget.server_memory_mib,
            model_weights_gib=round(shape.weight_bytes() / GIB, 3),
            extra_engine_args=tuple(req.extra_engine_args),
            gpu_memory_utilization=req.gpu_memory_utilization if tier == "gpu" else None,
            max_num_seqs=batch if tier == "neuron" else None,
        )
        for workload in workloads:
            plan.specs.append(
                BenchmarkSpec(server=server, load=_load_of(req, load, workload), campaign_id=campaign_id)
            )
    if problems:
        raise PlanningError(problems)
    for warning in plan.warnings:
        log.warning("%s", warning)
    return plan
