"""Planning, stage 3: size each instance type through its tier. The runtime build it runs, its ranks, what
the node leaves the server (Karpenter's allocatable less the DaemonSets and the load generator), its image,
and whether the model fits (the tier's fit). A type that cannot run says why, naming `instance_types[i]`."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from accelbench.campaign.check import Checked, Placed
from accelbench.campaign.request import CampaignRequest
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.core.problems import Problem
from accelbench.core.spec import LoadPlan
from accelbench.errors import ConfigError
from accelbench.sizing.fit import Fit, NodeBudget, loadgen_memory
from accelbench.tiers.base import Sizing

log = logging.getLogger(__name__)
MIN_SERVER_MEMORY_MIB = 1024


@dataclass(frozen=True)
class RuntimeBuild:
    """The server build a runtime runs in one campaign: its version, and the image and digest release
    discovery recorded for it (the Neuron image's tag cannot be computed from the version)."""

    version: str
    image: str | None = None
    digest: str | None = None


@dataclass(frozen=True)
class Sized:
    """One instance type sized for the campaign: what its ServerSpec is made from."""

    placed: Placed
    build: RuntimeBuild
    image: str
    ranks: int
    budget: NodeBudget
    fit: Fit


def size_instances(
    req: CampaignRequest,
    checked: Checked,
    load: LoadPlan,
    catalog: Mapping[str, InstanceSpec],
    builds: Mapping[str, RuntimeBuild],
    unavailable: Collection[str],
) -> list[Sized]:
    """Each plannable type sized, in the request's order; problems and warnings go to `checked`.
    A type whose runtime is `unavailable` is left out (the caller found no build and said why)."""
    sized = []
    for placed in checked.instances:
        if placed.tier.runtime in unavailable:
            continue
        if (one := _size(req, checked, load, catalog, builds[placed.tier.runtime], placed)) is not None:
            sized.append(one)
    return sized


def _size(
    req: CampaignRequest,
    checked: Checked,
    load: LoadPlan,
    catalog: Mapping[str, InstanceSpec],
    build: RuntimeBuild,
    placed: Placed,
) -> Sized | None:
    tier, spec, problems = placed.tier, placed.spec, checked.problems
    ranks, rank_problems = tier.tensor_parallel(req, spec, checked.shape, checked.warnings)
    problems += rank_problems
    budget = _budget(placed, load, problems, quality=bool(req.quantized_models))
    if budget is None:
        return None
    try:
        image = tier.recipe.image(build.version, build.image)
    except ConfigError as exc:
        problems.append(Problem(exc.field, exc.value, exc.why))
        return None
    if unsupported := tier.recipe.support_problem(spec.family, build.version):
        problems.append(Problem(placed.where, placed.name, unsupported))
        return None
    if checked.shape is None or rank_problems:
        return None
    sizing = Sizing(req, checked.shape, spec, budget, ranks, load, tier.concurrency(load))
    fit = tier.fit(sizing)
    if not fit.fits:
        problems.append(Problem(placed.where, placed.name, tier.refusal(fit, sizing, catalog)))
        return None
    checked.warnings += [f"{placed.name}: {w}" for w in fit.warnings]
    log.info("%s: %s", placed.name, fit.summary())
    return Sized(placed, build, image, ranks, budget, fit)


def _budget(placed: Placed, load: LoadPlan, problems: list[Problem], *, quality: bool) -> NodeBudget | None:
    """What the node leaves the server; None (with the problem) when too little or unknown. `quality`: the
    load generator also runs a quantization matrix's quality step (lm-eval), so it needs more memory."""
    spec = placed.spec
    if spec.max_pods is None:
        why = (
            "the catalog row has no max_pods (it predates catalog revision 0003), so the node's "
            "kube-reserved memory is unknown: run accelbench_instance_catalog to re-seed it"
        )
        problems.append(Problem(placed.where, placed.name, why))
        return None
    budget = placed.tier.node_budget(spec, loadgen_memory(load, quality=quality))
    if budget.server_cpu >= 1 and budget.server_memory_mib >= MIN_SERVER_MEMORY_MIB:
        return budget
    why = (
        f"too small for a benchmark pod ({spec.vcpu} vCPU, {spec.memory_gib:g} GiB): after Karpenter's "
        "reserves, the DaemonSets and the load generator "
        f"(1 core, {budget.loadgen_mib / 1024:.2f} GiB for "
        f"this load plan), the server would get {budget.server_cpu} core(s) and "
        f"{budget.server_memory_gib:.2f} GiB; it needs at least 1 core and 1 GiB"
    )
    problems.append(Problem(placed.where, placed.name, why))
    return None
