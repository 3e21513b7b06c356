"""Plan a campaign: a CampaignRequest becomes BenchmarkSpecs, or is refused with every problem at once.

In four stages, each a module: check the request (campaign.check), build the load plan (campaign.load),
size each instance type through its tier (campaign.size), make the specs (campaign.specs). An import-linter
contract keeps them in that order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from accelbench.campaign.check import check_request
from accelbench.campaign.load import build_load_plan
from accelbench.campaign.quantization import configurations, matrix_problems, renamed, with_quality
from accelbench.campaign.request import CampaignRequest
from accelbench.campaign.size import RuntimeBuild, size_instances
from accelbench.campaign.specs import make_specs
from accelbench.campaign.variants import interleaved, variant_problems, variant_requests
from accelbench.campaign.variants import renamed as variant_renamed
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.core.problems import PlanningError, Problem, problems_from_validation
from accelbench.core.spec import BenchmarkSpec
from accelbench.sizing.fit import Fit
from accelbench.sizing.model_config import ModelShape, load_model_shape

log = logging.getLogger(__name__)


@dataclass
class Plan:
    specs: list[BenchmarkSpec]
    fits: dict[str, Fit] = field(default_factory=dict)  # instance type -> how the model fits it
    warnings: list[str] = field(default_factory=list)
    shape: ModelShape | None = None  # the model's (of a quantization matrix: the reference's)


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
    builds: Mapping[str, RuntimeBuild] | None = None,
    unavailable: Collection[str] = (),
) -> Plan:
    """All guards run; a PlanningError lists every problem, each naming its field and value.

    Each instance type runs its tier's runtime (or the request's), at its build in `builds`, else at
    `version` (with `image_digest`); a type whose runtime is `unavailable` is left out (the caller found no
    build of it and said why in `preflight`). `preflight`: problems of the execution environment found by
    the caller (kubernetes mode's lake, image, connection), reported with the campaign's own.

    A quantization matrix (`quantized_models`) plans each checkpoint as the request with that model, and gives
    every spec the quality plan that names `model` as the reference (accelbench.campaign.quantization)."""

    def one(request: CampaignRequest, found: Sequence[Problem]) -> Plan:
        return _plan_one(
            request, catalog, version, campaign_id, load_shape, image_digest, found, builds, unavailable
        )

    if req.variants:
        return plan_variants(req, preflight, one)
    if not req.quantized_models:
        return one(req, preflight)
    plans, problems = {}, []
    for where, request in configurations(req):
        try:
            plans[where] = one(request, preflight if where == "model" else ())
        except PlanningError as exc:
            problems += [renamed(p, where, request.model) for p in exc.problems]
    problems += matrix_problems(req, {where: p.shape for where, p in plans.items()})
    if problems:
        raise PlanningError(problems)
    first = plans["model"]
    specs = with_quality(req, [spec for plan in plans.values() for spec in plan.specs])
    warnings = list(dict.fromkeys(w for plan in plans.values() for w in plan.warnings))
    return Plan(specs, fits=first.fits, warnings=warnings, shape=first.shape)


def plan_variants(
    req: CampaignRequest,
    preflight: Sequence[Problem],
    one: Callable[[CampaignRequest, Sequence[Problem]], Plan],
) -> Plan:
    """An A/B comparison: each variant planned by `one` as the request with what it changes (the first with
    `preflight`), the servers in rounds (accelbench.campaign.variants); every variant's problems at once, a
    problem of a field a variant changed named by the variant's field."""
    problems = variant_problems(req)
    plans: list[Plan] = []
    for i, (where, request) in enumerate(variant_requests(req)):
        try:
            plans.append(one(request, preflight if i == 0 else ()))
        except PlanningError as exc:
            found = [variant_renamed(p, where, req.variants[i]) for p in exc.problems]
            problems += [p for p in found if p not in problems]
    if problems:
        raise PlanningError(problems)
    specs = interleaved(req, [plan.specs for plan in plans])
    warnings = list(dict.fromkeys(w for plan in plans for w in plan.warnings))
    fits = {k: v for plan in plans for k, v in plan.fits.items()}
    return Plan(specs, fits=fits, warnings=warnings, shape=plans[0].shape)


def _plan_one(
    req: CampaignRequest,
    catalog: Mapping[str, InstanceSpec],
    version: str,
    campaign_id: str,
    load_shape: Callable[[str], ModelShape],
    image_digest: str | None,
    preflight: Sequence[Problem],
    builds: Mapping[str, RuntimeBuild] | None,
    unavailable: Collection[str],
) -> Plan:
    """One model's campaign: the four stages."""
    checked = check_request(req, catalog, load_shape, list(preflight))
    req = checked.request or req  # with its trace read
    load, load_problems = build_load_plan(req, checked)
    checked.problems += load_problems
    runs = {
        t.runtime: (builds or {}).get(t.runtime) or RuntimeBuild(version, digest=image_digest)
        for t in checked.tiers
    }
    sized = size_instances(req, checked, load, catalog, runs, unavailable)
    if checked.problems:
        raise PlanningError(checked.problems)
    plan = Plan(make_specs(req, checked, load, sized, campaign_id), warnings=checked.warnings)
    plan.fits = {one.placed.name: one.fit for one in sized}
    plan.shape = checked.shape
    for warning in plan.warnings:
        log.warning("%s", warning)
    return plan
