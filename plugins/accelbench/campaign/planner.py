"""Turn a CampaignRequest into BenchmarkSpecs, or refuse it with every problem at once."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from accelbench.campaign import guards
from accelbench.campaign.problems import PlanningError, Problem, problems_from_validation
from accelbench.campaign.request import CampaignRequest, SloName
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.core.families import CPU_FAMILIES, refuse_graviton2
from accelbench.core.search import SearchPlan
from accelbench.core.spec import BenchmarkSpec, GoodputMetric, LoadPlan, ServerSpec
from accelbench.core.workloads import DEFAULT_WORKLOAD, Workload
from accelbench.errors import ConfigError
from accelbench.runtime.recipes import CPU_DTYPE, Recipe, recipe_for
from accelbench.sizing.fit import GIB, FitPlan, NodeBudget, loadgen_memory_mib, plan_fit
from accelbench.sizing.model_config import ModelShape, load_model_shape

log = logging.getLogger(__name__)
GPU_FIT_FRACTION = 0.90


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


def _instance_problems(
    req: CampaignRequest, recipe: Recipe, index: int, name: str, catalog: Mapping[str, InstanceSpec]
) -> tuple[InstanceSpec | None, list[Problem]]:
    where = f"instance_types[{index}]"
    try:
        refuse_graviton2(name, where)
    except ConfigError as exc:
        return None, [Problem(where, name, str(exc).split(": ", 1)[1])]
    inst = catalog.get(name)
    if inst is None:
        return None, [Problem(where, name, "not in the instance catalog (run accelbench_instance_catalog)")]
    if inst.accelerator_type != recipe.accelerator_type:
        return inst, [
            Problem(
                where,
                name,
                f"is a {inst.accelerator_type} instance; runtime {recipe.runtime} "
                f"needs a {recipe.accelerator_type} instance",
            )
        ]
    return inst, []


def _tensor_parallel(req: CampaignRequest, inst: InstanceSpec) -> tuple[int, list[Problem]]:
    if inst.accelerator_type == "cpu":
        tp = req.tensor_parallel_size or inst.numa_nodes  # one rank per NUMA node
        if tp > inst.numa_nodes:
            return tp, [
                Problem(
                    "tensor_parallel_size",
                    tp,
                    f"greater than the {inst.numa_nodes} NUMA "
                    f"node(s) of {inst.instance_type}; on CPU each rank is a NUMA node",
                )
            ]
        return tp, []
    tp = req.tensor_parallel_size or inst.accelerator_count
    if tp > inst.accelerator_count:
        return tp, [
            Problem(
                "tensor_parallel_size",
                tp,
                f"greater than the {inst.accelerator_count} accelerators of {inst.instance_type}",
            )
        ]
    return tp, []


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


def plan_campaign(
    req: CampaignRequest,
    catalog: Mapping[str, InstanceSpec],
    version: str,
    campaign_id: str,
    load_shape: Callable[[str], ModelShape] = load_model_shape,
    image_digest: str | None = None,
    preflight: Sequence[Problem] = (),
) -> Plan:
    """All guards run; a PlanningError lists every problem, each naming its field and value.

    `preflight`: problems of the execution environment found by the caller (kubernetes mode's lake,
    image, connection), reported with the campaign's own."""
    recipe = recipe_for(req.runtime)
    problems: list[Problem] = [*preflight, *guards.check_engine_args(req)]
    plan = Plan(specs=[])
    cpu = recipe.accelerator_type == "cpu"
    if cpu:
        problems += guards.check_cpu_request(req)
    shape: ModelShape | None = None
    try:
        shape = load_shape(req.model)
    except ConfigError as exc:
        problems.append(Problem("model", req.model, str(exc).split(": ", 1)[-1]))
    if shape is not None and cpu:
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
    for i, name in enumerate(req.instance_types):
        inst, found = _instance_problems(req, recipe, i, name, catalog)
        problems += found
        if inst is None or found:
            continue
        tp, tp_problems = _tensor_parallel(req, inst)
        problems += tp_problems
        if inst.max_pods is None:
            problems.append(
                Problem(
                    f"instance_types[{i}]",
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
                    f"instance_types[{i}]",
                    name,
                    f"too small for a benchmark pod ({inst.vcpu} vCPU, {inst.memory_gib:g} GiB): after "
                    f"Karpenter's reserves, the DaemonSets and the load generator (1 core, "
                    f"{budget.loadgen_mib / 1024:.2f} GiB for this load plan), the server would get "
                    f"{budget.server_cpu} core(s) and {budget.server_memory_gib:.2f} GiB; it needs at least "
                    "1 core and 1 GiB",
                )
            )
            continue
        if shape is None:
            continue
        kv_gib = 0
        if cpu:
            fit = _fit(shape, inst, budget, tp, load, req.context_len)
            plan.fits[name] = fit
            if not fit.fits:
                problems.append(
                    Problem(
                        f"instance_types[{i}]",
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
        elif shape.weight_bytes() / GIB > tp * inst.accelerator_memory_gib * GPU_FIT_FRACTION:
            problems.append(
                Problem(
                    f"instance_types[{i}]",
                    name,
                    f"{req.model} weights "
                    f"({shape.weight_bytes() / GIB:.1f} GiB) exceed {GPU_FIT_FRACTION:.0%} of "
                    f"{tp} x {inst.accelerator_memory_gib:g} GiB accelerator memory",
                )
            )
            continue
        server = ServerSpec(
            runtime=recipe.runtime,
            version=version,
            image=recipe.image(version),
            image_digest=image_digest,
            model=req.model,
            model_revision=req.model_revision,
            served_model_name=served_name(req),
            dtype=CPU_DTYPE if cpu else req.dtype,
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
