"""What a campaign DAG's planning tasks call: a campaign's plan with its estimate and the `max_campaign_usd`
budget guard, and a version campaign's plan (the version matrix at a version, less what the lake holds).

Each takes what it reads (the catalog, the lake, the prices) from its caller and returns a typed outcome; a
planning problem raises the library's PlanningError (or a ConfigError) as `prepare_campaign` does. What a
scheduler would skip is the outcome's `skip`: the caller (an Airflow task) maps it to a skipped task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from accelbench.campaign.estimate import ServerEstimate, estimate, over_budget
from accelbench.campaign.matrix import VERSION_MATRIX_SETTING, matrix_at
from accelbench.campaign.prepare import ModeChecks, Prepared, prepare_campaign, unconfigured
from accelbench.campaign.request import CampaignRequest
from accelbench.campaign.variants import rounds_words
from accelbench.catalog.db import CatalogOpener
from accelbench.catalog.decisions import decisions
from accelbench.config import Settings
from accelbench.core.modes import check_mode, default_mode
from accelbench.core.price import Price
from accelbench.core.problems import PlanningError
from accelbench.core.server_group import group_specs
from accelbench.core.spec import BenchmarkSpec
from accelbench.decisions import Decision, standing
from accelbench.errors import AccelbenchError
from accelbench.lake.spreads import resolution_lines
from accelbench.lake.store import Lake
from accelbench.tiers import CPU

log = logging.getLogger(__name__)

Prices = Callable[[Engine, set[str]], list[Price]]  # the catalog's price history of these instance types


@dataclass(frozen=True)
class CampaignPlan:
    """A campaign's planned specs and what each server will cost, estimated; or why a scheduled campaign
    has nothing to measure yet (`skip`, and no specs)."""

    specs: list[BenchmarkSpec] = field(default_factory=list)
    estimates: list[ServerEstimate] = field(default_factory=list)
    skip: str | None = None

    def groups_json(self) -> list[dict[str, Any]]:
        """What the benchmark tasks are mapped over: a server each, its workloads' specs in turn."""
        return [group.model_dump(mode="json") for group in group_specs(self.specs)]


def plan(
    request: CampaignRequest,
    catalog: CatalogOpener,
    campaign_id: str,
    checks: ModeChecks,
    prices: Prices,
    *,
    as_of: datetime | None = None,
    scheduled: bool = False,
    lake: Callable[[], Lake] = Lake.from_env,
    region: str | None = None,
) -> CampaignPlan:
    """Plan `request`, log and guard its estimate (`check_budget`), log what its repeats can resolve.

    `scheduled`: the run was made by the scheduler, so an install without the model skips. `region`: the
    prices' (None: the first of ACCELBENCH_REGIONS)."""
    why = unconfigured(request) if scheduled else None
    if why:
        return CampaignPlan(skip=why)
    with catalog() as engine:
        planned = prepare_campaign(request, engine, campaign_id, checks, as_of=as_of)
        found = prices(engine, {s.server.instance_type for s in planned.specs})
    servers = group_specs(planned.specs)
    log.info(
        "planned %d servers for %d workload runs: %s",
        len(servers),
        len(planned.specs),
        "; ".join(f"{g.server.instance_type}: {g.workloads()}" for g in servers),
    )
    if rounds := rounds_words(planned.specs):
        log.info("%s", rounds)
    mode = check_mode(request.execution_mode or default_mode())
    try:
        opened: Lake | None = lake()
    except AccelbenchError as exc:
        log.warning("the estimate uses stated figures: the lake could not be opened (%s)", exc)
        opened = None
    region = region or Settings.from_env("regions").aws.regions[0]
    slots = Settings.from_env("benchmark_pool_slots").airflow.benchmark_pool_slots or 1
    estimates = check_budget(request.max_campaign_usd, planned.specs, opened, found, region, mode, slots)
    log_resolution(planned.specs, lake, mode)
    return CampaignPlan(planned.specs, estimates)


def check_budget(
    max_campaign_usd: float | None,
    specs: Sequence[BenchmarkSpec],
    lake: Lake | None,
    prices: Sequence[Price],
    region: str,
    mode: str,
    slots: int = 1,
) -> list[ServerEstimate]:
    """The budget guard: log what the plan will cost (`accelbench.campaign.estimate`; `lake` None: the
    stated figures; `slots`: the benchmark pool's) and raise PlanningError naming `max_campaign_usd` when it
    is above it."""
    estimates = estimate(specs, lake, prices, region, mode, slots=slots)
    lines = [e.text() for e in estimates]
    log.info(
        "what this campaign will cost, estimated: %.4f USD\n%s",
        sum(e.usd for e in estimates),
        "\n".join(lines),
    )
    if problem := over_budget(estimates, max_campaign_usd):
        raise PlanningError([problem])
    return estimates


def log_resolution(specs: Sequence[BenchmarkSpec], lake: Callable[[], Lake], mode: str) -> None:
    """How much to measure: what the planned repeats can resolve, from the lake's earlier repeats of the
    same points (advice: a lake that cannot be read says so and planning goes on)."""
    try:
        lines = resolution_lines(specs, lake(), mode)
    except Exception as exc:  # advice only: never the reason a campaign does not run
        log.warning("how much to measure: the lake's earlier runs could not be read (%s)", exc)
        return
    for line in lines:
        log.info("how much to measure: %s", line)


@dataclass(frozen=True)
class VersionPlan:
    """A version campaign's plan (`planned`), or why the version is not measured (`skip`: the owner
    rejected it, and it was not forced)."""

    planned: Prepared | None = None
    skip: str | None = None


def plan_version(
    matrix: Mapping[str, Any],
    version: str | None,
    execution_mode: str,
    force: bool,
    campaign_id: str,
    as_of: datetime | None,
    catalog: CatalogOpener,
    checks: ModeChecks,
    lake: Callable[[], Lake] = Lake.from_env,
) -> VersionPlan:
    """The version matrix (`matrix`, the params of ACCELBENCH_VERSION_MATRIX) at `version`; the specs the
    lake holds complete for it are split off (logged) unless `force`."""
    request = matrix_at(matrix, version, execution_mode)
    log.info("vLLM CPU %s with the matrix of %s: %s", request.version, VERSION_MATRIX_SETTING, request)
    with catalog() as engine:
        found = rejected(engine, request.model, request.version)
        if found is not None and not force:
            return VersionPlan(skip=f"{found.text()}: not measured again (force=true measures it)")
        planned = prepare_campaign(
            request, engine, campaign_id, checks, as_of=as_of, lake=lake(), force=force
        )
    _log_measured(planned)
    return VersionPlan(planned)


def _log_measured(planned: Prepared) -> None:
    if planned.forced:
        log.info("force: measuring again %d specs the lake already holds", len(planned.measured))
        return
    for spec in planned.measured:
        log.info(
            "skipped %s: vLLM CPU %s was already measured with this matrix (matrix_key %s); "
            "send force=true to measure again",
            spec.server.instance_type,
            planned.version,
            spec.matrix_key,
        )


def rejected(engine: Engine, model: str, version: str | None) -> Decision | None:
    """The owner's standing rejection of `version` of the matrix's model, if any."""
    from accelbench.core.model_origin import model_identity

    if version is None:
        return None
    found = standing(decisions(engine, CPU.runtime), model_identity(model).model_id, version)
    return found if found is not None and found.decision == "rejected" else None
