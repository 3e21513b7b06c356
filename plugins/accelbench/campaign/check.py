"""Planning, stage 1: check the request. Each instance type against the catalog and its tier, the request's
fields against every tier in the campaign, the model's shape against the workloads, the search's fields.
Every problem is collected (each naming its field); what passes goes on to the load plan and the sizing."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from accelbench import tiers
from accelbench.campaign import guards
from accelbench.campaign.request import CampaignRequest
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.config import Settings
from accelbench.core.families import refuse_graviton2
from accelbench.core.model_origin import model_identity
from accelbench.core.modes import default_mode
from accelbench.core.problems import Problem
from accelbench.core.search_plan import SearchPlan
from accelbench.core.workloads import DEFAULT_WORKLOAD, TraceIdentity, Workload, traced
from accelbench.errors import ConfigError
from accelbench.sizing.model_config import ModelShape
from accelbench.tiers.base import Tier

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Placed:
    """One instance type of the request that the catalog has and its tier can plan."""

    index: int  # in request.instance_types: problems name `instance_types[index]`
    name: str
    spec: InstanceSpec
    tier: Tier

    @property
    def where(self) -> str:
        return f"instance_types[{self.index}]"


@dataclass
class Checked:
    """What the check leaves for the next stages: the plannable types, the tiers in the campaign, the
    model's shape, the workloads and the search, with every problem and warning found so far."""

    instances: list[Placed]
    tiers: list[Tier]  # in registry order: the types' tiers and the request's runtime's
    shape: ModelShape | None
    workloads: list[Workload | None]
    search: SearchPlan | None
    # The model's id when it is named by a local folder (its provenance or config gives it): the rows name
    # the model by it, so one model is one model wherever it ran. None: the model is named by its id.
    model_id: str | None = None
    request: CampaignRequest | None = None  # the request with its trace read (`CampaignRequest.with_trace`)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_request(
    req: CampaignRequest,
    catalog: Mapping[str, InstanceSpec],
    load_shape: Callable[[str], ModelShape],
    preflight: list[Problem],
    load_trace: Callable[[str], TraceIdentity] | None = None,
) -> Checked:
    """`preflight`: problems of the execution environment the caller found, reported first. `load_trace`: the
    trace workload's trace read and checked from where the request names it (`accelbench.lake.traces`).
    `Checked.request`: the request with its trace read (what the later stages plan). None: read from the
    request's `trace` (`accelbench.lake.traces.read_trace`; imported then: the campaign DAG's file imports
    this module at parse time, without pyarrow)."""
    if load_trace is None:
        from accelbench.lake.traces import read_trace

        def load_trace(location: str) -> TraceIdentity:
            return read_trace(location, Settings.from_env("lake_uri").lake.lake_uri)

    problems = [*preflight, *guards.check_engine_args(req)]
    instances: list[Placed] = []
    for i, name in enumerate(req.instance_types):
        placed, found = _instance(req, i, name, catalog)
        problems += found
        if placed is not None:
            instances.append(placed)
    in_campaign = {p.tier.name for p in instances}
    if req.runtime:
        in_campaign.add(tiers.of_runtime(req.runtime).name)
    campaign_tiers = [t for t in tiers.all_tiers() if t.name in in_campaign]
    reasons = [t.single_node_reason for t in campaign_tiers if t.single_node_reason]
    problems += guards.check_deployment(req, reasons[0] if reasons else None)
    for t in campaign_tiers:
        problems += t.request_problems(req, [p.name for p in instances if p.tier is t])
    req, problems = _read_trace(req, load_trace, problems)
    checked = Checked(instances, campaign_tiers, None, req.workload_specs(), None, problems=problems)
    checked.request = req
    checked.model_id = model_identity(req.model).spec_model_id
    _check_model(req, load_shape, checked)
    _check_workloads(req, checked)
    try:
        checked.search = req.search_plan()
    except ConfigError as exc:
        problems.append(Problem(exc.field, exc.value, exc.why))
    if checked.search is not None:
        s = checked.search
        log.info("load search: %s in [%g, %g], %s", s.variable, s.lower, s.upper, s.slos)
    return checked


def _instance(
    req: CampaignRequest, index: int, name: str, catalog: Mapping[str, InstanceSpec]
) -> tuple[Placed | None, list[Problem]]:
    where = f"instance_types[{index}]"
    try:
        refuse_graviton2(name, where)
    except ConfigError as exc:
        return None, [Problem(where, name, exc.why)]
    spec = catalog.get(name)
    if spec is None:
        return None, [Problem(where, name, "not in the instance catalog (run accelbench_instance_catalog)")]
    try:
        tier = tiers.tier(spec.accelerator_type, where)
    except ConfigError as exc:
        return None, [Problem(where, name, f"its catalog row's accelerator_type {exc.why}")]
    wanted = tiers.of_runtime(req.runtime) if req.runtime else tier
    if wanted is not tier:
        why = (
            f"is a {tier.name} instance; runtime {wanted.runtime} needs a {wanted.name} instance (leave "
            "runtime empty: each type runs its tier's runtime)"
        )
        return None, [Problem(where, name, why)]
    if unplannable := tier.instance_problem(spec):
        return None, [Problem(where, name, unplannable)]
    return Placed(index, name, spec, tier), []


def _check_model(req: CampaignRequest, load_shape: Callable[[str], ModelShape], checked: Checked) -> None:
    """The model's shape (its config.json), what each tier refuses of it, and its context length."""
    try:
        checked.shape = load_shape(req.model)
    except ConfigError as exc:
        checked.problems.append(Problem("model", req.model, exc.why))
        return
    for t in checked.tiers:
        checked.problems += t.model_problems(req, checked.shape, checked.warnings)
    limit = checked.shape.max_position_embeddings
    if 0 < limit < req.context_len:
        named = req.workloads != [DEFAULT_WORKLOAD]
        why = (
            f"the longest prompt + output (+ headroom) = {req.context_len} tokens exceeds {req.model}'s "
            f"context of {limit}"
        )
        field_name: str
        value: object
        field_name, value = ("workloads", req.workloads) if named else ("input_len", req.input_len)
        traced = next((w for w in req.workload_specs() if w is not None and w.trace is not None), None)
        if traced is not None and traced.trace is not None and req.context_len_of([traced]) > limit:
            trace = traced.trace
            why = (
                f"the trace's longest prompt ({trace.max_input} tokens) + output ({trace.max_output}) + "
                f"headroom = {req.context_len_of([traced])} tokens exceeds {req.model}'s context of {limit}: "
                "cut its long requests or choose a model with a longer context"
            )
            field_name, value = "trace", req.trace
        checked.problems.append(Problem(field_name, value, why))


def _read_trace(
    req: CampaignRequest, load_trace: Callable[[str], TraceIdentity], problems: list[Problem]
) -> tuple[CampaignRequest, list[Problem]]:
    """The trace workload's trace, read here (its every line checked, its identity and longest request), or
    the problems of the `trace` field; a trace without the trace workload is a mistake too."""
    if "trace" not in req.workloads:
        if req.trace:
            why = "a trace is replayed by the trace workload: add 'trace' to workloads, or leave trace empty"
            problems.append(Problem("trace", req.trace, why))
        return req, problems
    if not req.trace:
        why = "the trace workload needs a timed trace: a stored trace's name, an s3:// URI or a worker path"
        return req, [*problems, Problem("trace", req.trace, why)]
    kubernetes = (req.execution_mode or default_mode()) == "kubernetes"
    if kubernetes and not req.trace.startswith("s3://") and "/" in req.trace:
        why = (
            "a kubernetes benchmark pod cannot read a file on the worker: store the trace in the lake "
            "(accelbench_make_trace, then name it) or give its s3:// URI in the lake's bucket"
        )
        return req, [*problems, Problem("trace", req.trace, why)]
    try:
        identity = load_trace(req.trace)
    except ConfigError as exc:
        return req, [*problems, Problem("trace", req.trace, exc.why)]
    lake = Settings.from_env("lake_uri").lake.lake_uri
    if kubernetes and not _same_bucket(identity.uri, lake):
        why = (
            f"the benchmark pod's role reads the lake's bucket ({lake}), and this trace lies elsewhere: "
            "store it in the lake with accelbench_make_trace"
        )
        return req, [*problems, Problem("trace", req.trace, why)]
    search = req.search_variable == "time_scale" and req.load_mode == "search"
    if search and identity.requests < req.search_min_requests:
        why = (
            f"{identity.requests} requests: each probe replays the whole trace, and a probe's p99 needs "
            f"search_min_requests={req.search_min_requests}; use a longer window of the traffic"
        )
        problems.append(Problem("trace", req.trace, why))
    log.info("trace: %s", identity.words())
    return req.with_trace(traced(identity)), problems


def _same_bucket(uri: str, lake: str) -> bool:
    """Whether `uri` lies in the lake's S3 bucket (what the benchmark pod's role may read)."""
    bucket = lake.removeprefix("s3://").split("/", 1)[0]
    return lake.startswith("s3://") and uri.startswith(f"s3://{bucket}/")


def _check_workloads(req: CampaignRequest, checked: Checked) -> None:
    """A custom workload's file is read by the load generator: on this worker in local mode, in the
    benchmark pod in kubernetes mode, whose containers see no file of the worker's (the pod gets its
    spec alone: `accelbench.k8s.pod`), so kubernetes mode refuses it here rather than after a node was
    bought."""
    kubernetes = (req.execution_mode or default_mode()) == "kubernetes"
    for w in checked.workloads:
        if w is None or w.dataset != "custom":
            continue
        if kubernetes:
            why = (
                "the custom workload's file is read by the load generator, and a kubernetes benchmark pod "
                "cannot read a file on the worker: run the custom workload with execution_mode=local"
            )
            checked.problems.append(Problem("custom_prompts", req.custom_prompts, why))
        elif not (w.path and Path(w.path).is_file()):
            why = "the custom workload needs a JSONL file here"
            checked.problems.append(Problem("custom_prompts", req.custom_prompts, why))
