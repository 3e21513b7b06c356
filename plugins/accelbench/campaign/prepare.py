"""Prepare a campaign: what every campaign calls before it runs (weekly, per version, the backfill's check).

`plan.plan_campaign` checks and sizes a request at given builds against a given catalog; this finds those
(each runtime's version: as asked, local mode's own or the catalog's newest; its image and digest; the
execution mode's needs), plans, and splits off what the lake already holds, returning what to run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine

from accelbench import tiers
from accelbench.campaign.plan import Plan, plan_campaign, plan_variants
from accelbench.campaign.request import CampaignRequest
from accelbench.campaign.size import RuntimeBuild
from accelbench.campaign.weights import weights_prefix, weights_problems
from accelbench.catalog import queries
from accelbench.catalog.retract import retracted_run_ids
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.core.modes import check_mode, default_mode
from accelbench.core.problems import Problem
from accelbench.core.spec import BenchmarkSpec
from accelbench.errors import ConfigError
from accelbench.lake.measured import measured_specs
from accelbench.lake.store import Lake
from accelbench.runtime.version_rules import local_mode_version
from accelbench.runtime.versions import resolve_version
from accelbench.sizing.model_config import MODEL_STORE_SETTING, find_config

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModeChecks:
    """What planning asks of the execution modes, supplied by the caller (execution/ and k8s/ sit above
    campaign/ in the layers). Each is called only in its own mode."""

    # local: (the installed vLLM's version, its interpreter) of a runtime's local environment; a
    # ConfigError when this worker cannot run that runtime (no GPU, no CUDA vLLM environment, Neuron)
    local_vllm: Callable[[str], tuple[str, str]]
    kubernetes_problems: Callable[[str], list[Problem]]  # kubernetes: its needs for this model


@dataclass(frozen=True)
class Prepared:
    """A plan split by the lake: `specs` to run; `measured`, those it already holds complete."""

    version: str
    specs: list[BenchmarkSpec]
    measured: list[BenchmarkSpec] = field(default_factory=list)
    forced: bool = False  # measured specs are in `specs` too: measured again

    @property
    def already_measured(self) -> bool:
        """Nothing to run: every planned spec is complete in the lake (and not forced)."""
        return not self.specs


def campaign_runtimes(
    request: CampaignRequest, catalog: Mapping[str, InstanceSpec]
) -> dict[str, list[tuple[int, str]]]:
    """The runtimes a campaign runs, each with its instance types (index, name) in the request's order:
    the request's runtime, else each catalog type's tier's (types not in the catalog or of no registered
    tier: the planner says)."""
    out: dict[str, list[tuple[int, str]]] = {}
    known = tiers.names()
    for i, name in enumerate(request.instance_types):
        inst = catalog.get(name)
        tier_runtime = (
            tiers.tier(inst.accelerator_type).runtime if inst and inst.accelerator_type in known else None
        )
        if runtime := request.runtime or tier_runtime:
            out.setdefault(runtime, []).append((i, name))
    return out


def unconfigured(request: CampaignRequest) -> str | None:
    """Why a scheduled campaign has nothing to measure yet (a fresh install: the model store lacks its
    model), saying what to set; None when it has."""
    try:
        find_config(request.model)
    except ConfigError as exc:
        return (
            f"the scheduled campaign has nothing to measure yet: {exc}. Put the model's config.json in "
            f"the model store ({MODEL_STORE_SETTING}; docs/guides/deploy-on-eks.md) or set "
            "ACCELBENCH_DEFAULT_MODEL to a model it holds; a manual run with a model of your choice works "
            "meanwhile"
        )
    return None


def prepare_campaign(
    request: CampaignRequest,
    engine: Engine,
    campaign_id: str,
    checks: ModeChecks,
    *,
    as_of: datetime | None = None,
    lake: Lake | None = None,
    force: bool = False,
) -> Prepared:
    """Plan `request`; every problem raises one PlanningError (or a ConfigError) naming its field.

    `as_of`: the run's logical date, for the newest catalog version then. `lake`: leave out the specs
    it holds complete (unretracted, from any campaign) unless `force`; None: no lake lookup."""
    local = check_mode(request.execution_mode or default_mode()) == "local"
    problems = [] if local else checks.kubernetes_problems(request.model)
    models = [request.model, *request.quantized_models, *(v.model for v in request.variants if v.model)]
    problems += weights_problems(models, weights_prefix())
    catalog = queries.instance_catalog(engine)
    builds, unavailable = runtime_builds(request, engine, catalog, checks, local, as_of, problems)
    version = _main_version(request, builds)

    def one(req: CampaignRequest, found: Sequence[Problem]) -> Plan:
        """A variant of an A/B comparison at its own builds (it may pin other versions)."""
        own: list[Problem] = []
        built, missing = runtime_builds(req, engine, catalog, checks, local, as_of, own)
        found = [*found, *(p for p in own if p not in found)]
        main = _main_version(req, built)
        return plan_campaign(
            req, catalog, main, campaign_id, preflight=found, builds=built, unavailable=missing
        )

    if request.variants:
        specs = plan_variants(request, problems, one).specs
    else:
        specs = plan_campaign(
            request, catalog, version, campaign_id, preflight=problems, builds=builds, unavailable=unavailable
        ).specs
    if lake is None or request.variants:  # an A/B's rounds are measured anew: they compare with each other
        return Prepared(version, specs)
    measured = measured_specs(lake, specs, retracted_run_ids(engine))
    done = {s.matrix_key for s in measured}
    todo = specs if force else [s for s in specs if s.matrix_key not in done]
    return Prepared(version, todo, measured, forced=force and bool(measured))


def _main_version(request: CampaignRequest, builds: Mapping[str, RuntimeBuild]) -> str:
    """The campaign's version as its rows and logs name it: the CPU runtime's build, else the first's."""
    first = builds.get(tiers.CPU.runtime) or next(iter(builds.values()), None)
    return first.version if first else request.version or "unknown"


def runtime_builds(
    request: CampaignRequest,
    engine: Engine,
    catalog: Mapping[str, InstanceSpec],
    checks: ModeChecks,
    local: bool,
    as_of: datetime | None,
    problems: list[Problem],
) -> tuple[dict[str, RuntimeBuild], list[str]]:
    """The build each runtime of the campaign runs: local mode's own vLLM environment, else the version the
    request pins (its tier's version field) or the catalog's newest at `as_of`, with the image and digest
    discovery recorded. A runtime this worker cannot run locally is `unavailable`, its types in `problems`."""
    builds: dict[str, RuntimeBuild] = {}
    unavailable: list[str] = []
    for runtime, names in campaign_runtimes(request, catalog).items():
        tier = tiers.of_runtime(runtime)
        # An error names the field the user knows: the tier's older one where it has one (`version`).
        field_name = tier.version_field or f"versions.{tier.name}"
        version = request.version_of(tier.name)
        if local:
            try:
                installed, where = checks.local_vllm(runtime)
            except ConfigError as exc:
                problems += [Problem(f"instance_types[{i}]", name, exc.why) for i, name in names]
                unavailable.append(runtime)
                continue
            version = local_mode_version(version, installed, where, field_name)
            log.info("%s version %s (local mode: the vLLM environment's own, %s)", runtime, version, where)
            builds[runtime] = RuntimeBuild(version)  # a local server runs its own build, no image
            continue
        if version is None:
            families = [catalog[name].family for _, name in names if name in catalog]
            version, source = resolve_version(engine, tier.recipe, as_of, instance_families=families)
            log.info("%s version %s (%s)", runtime, version, source)
        # Pods pull the image and digest discovery recorded (the Neuron image's tag is only known so).
        image, digest = queries.runtime_image(engine, runtime, version)
        builds[runtime] = RuntimeBuild(version, image=image, digest=digest)
    return builds, unavailable
