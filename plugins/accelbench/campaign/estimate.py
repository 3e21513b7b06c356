"""What a planned campaign will cost before it runs: per server, a start-up allowance (once: a server runs
each of its configuration's workloads, `core.server_group`) plus the requests each workload's load plan sends
over a throughput, priced on-demand at today's price; `max_campaign_usd` refuses a plan whose
estimate is above it, before any server starts.

The start-up allowance is the median `ready_s` of the lake's earlier start-ups of the instance type in the
same mode, else ACCELBENCH_STARTUP_ALLOWANCE_S; the throughput is the median request rate of the lake's
earlier runs of the same configuration (matrix key), else ACCELBENCH_STATED_REQUESTS_PER_S. Both say which
they used. A trace workload's server takes at least its replays' own time (`replay_s`: a trace of 100
requests over an hour takes an hour at 1x, whatever the rate). A local server is not billed (its host is not
bought for the campaign): its estimate is 0.

The campaign run's deadline (`deadline_s`) is fixed by Airflow when it creates the run, before the plan task
has planned anything: it is estimated from the request alone (its servers and their requests), with the
stated allowances, times ACCELBENCH_DEADLINE_FACTOR; a trace is not read then, so its replays' own time is
not in it."""

from __future__ import annotations

import logging
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow.dataset as ds

from accelbench.campaign.request import CampaignRequest
from accelbench.config import Settings, env_name
from accelbench.core.modes import default_mode
from accelbench.core.price import SECONDS_PER_HOUR, Price, price_at
from accelbench.core.problems import Problem
from accelbench.core.server_group import group_key, group_specs
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake

log = logging.getLogger(__name__)
SEARCH_PROBES = 8  # probes a load search is assumed to take (its budget is not fixed in advance)


@dataclass(frozen=True)
class Stated:
    """What an estimate assumes where the lake measured nothing (ACCELBENCH_STARTUP_ALLOWANCE_S,
    ACCELBENCH_STATED_REQUESTS_PER_S, and ACCELBENCH_NODE_START_ALLOWANCE_S: the part of a start-up a pod on
    its type's node already up does not pay)."""

    startup_s: float
    requests_per_s: float
    node_start_s: float = 0.0

    @classmethod
    def from_env(cls) -> Stated:
        s = Settings.from_env("startup_allowance_s", "stated_requests_per_s", "node_start_allowance_s")
        if s.airflow.startup_allowance_s < 0:
            raise ConfigError(
                env_name("startup_allowance_s"), s.airflow.startup_allowance_s, "seconds, 0 or more"
            )
        if s.airflow.stated_requests_per_s <= 0:
            raise ConfigError(env_name("stated_requests_per_s"), s.airflow.stated_requests_per_s, "above 0")
        if s.airflow.node_start_allowance_s < 0:
            why = "seconds, 0 or more"
            raise ConfigError(env_name("node_start_allowance_s"), s.airflow.node_start_allowance_s, why)
        startup_s = s.airflow.startup_allowance_s  # the node's start is a part of it, at most all of it
        node_s = min(s.airflow.node_start_allowance_s, startup_s)
        return cls(startup_s, s.airflow.stated_requests_per_s, node_s)


@dataclass(frozen=True)
class Startups:
    """The lake's earlier start-ups of one instance type in one mode (median `ready_s`): `cold`, on a node
    launched for the pod (every start-up in local mode, or where the lake saw no launch); `warm`, on a node
    already up with the server image on it (kubernetes mode; None: none measured)."""

    cold: float | None = None
    warm: float | None = None


def node_starts(mode: str, slots: int, earlier: int) -> bool:
    """Whether a server, the `earlier`+1-th of its instance type in the plan, pays its node's start: in
    kubernetes mode the first `slots` of a type do (the benchmark pool runs that many pods at once, each
    on a node of its own), the rest start on a node of theirs already up (`core.server_group.by_instance_type`
    starts a type's pods back to back, within the NodePool's `consolidateAfter`); in local mode there is no
    node to start."""
    return mode != "kubernetes" or earlier < max(1, slots)


def startup_of(found: Startups | None, stated: Stated, new_node: bool) -> tuple[float, str]:
    """A server's start-up allowance and where it comes from."""
    if not new_node:
        if found is not None and found.warm is not None:
            return found.warm, "measured before, on its type's node already up"
        return stated.startup_s - stated.node_start_s, "stated allowance less the node's start (already up)"
    if found is not None and found.cold is not None:
        return found.cold, "measured before"
    return stated.startup_s, "stated allowance"


@dataclass(frozen=True)
class ServerEstimate:
    """One workload's share of a server: the server's start-up on its first workload only (`server`: the
    group's id, which the shares of one server have in common)."""

    spec_id: str
    instance_type: str
    requests: int
    startup_s: float
    startup_from: str  # "measured" or "stated"
    requests_per_s: float
    rate_from: str
    usd_per_hour: float | None  # None: unpriced (local, or no price)
    why_unpriced: str | None
    # A trace workload's levels take at least the trace's own time at their scales (`replay_s`): never less.
    replay_s: float = 0.0
    server: str = ""  # the server group's id: "" a server of its own

    @property
    def seconds(self) -> float:
        return self.startup_s + max(self.requests / self.requests_per_s, self.replay_s)

    @property
    def usd(self) -> float:
        return (self.usd_per_hour or 0.0) * self.seconds / SECONDS_PER_HOUR

    def text(self) -> str:
        price = f"{self.usd_per_hour:.4f} USD/h" if self.usd_per_hour is not None else self.why_unpriced
        load = f"{self.requests} requests at {self.requests_per_s:.2f} req/s ({self.rate_from})"
        if self.replay_s > self.requests / self.requests_per_s:
            load = f"the trace's replays, {self.replay_s:.0f} s (longer than {load})"
        return (
            f"{self.spec_id} on {self.instance_type}: {self.startup_s:.0f} s start-up ({self.startup_from})"
            f" + {load} = {self.seconds:.0f} s x {price} = {self.usd:.4f} USD"
        )


def requests_of(load: LoadPlan, recheck: bool | None = None) -> int:
    """Every request the load generator sends to a server of this load plan: warm-ups, each level's warm-ups
    and repeats, the recheck of a campaign of two or more levels; a search's SEARCH_PROBES probes.
    `recheck`: whether its first level is measured again (None: as a server of this workload alone does,
    with two levels or more; a server of several workloads rechecks its first one's, `rechecks`)."""
    if load.search is not None:
        per_probe = load.search.max_requests or load.search.min_requests
        return load.warmups + SEARCH_PROBES * load.search.repeats * per_probe
    levels = len(load.concurrency) + len(load.request_rates) + len(load.time_scales)
    recheck = (levels > 1) if recheck is None else recheck
    return (
        load.warmups
        + levels * (load.level_warmups + load.repeats * load.prompts_per_level)
        + int(recheck) * (load.prompts_per_level)
    )


def rechecks(loads: Sequence[LoadPlan]) -> list[bool | None]:
    """Which of one server's workloads' first level is measured again (`accelbench.loadgen.workload_group`):
    a workload alone as always (None); of several, the first with fixed levels, once, after the others."""
    if len(loads) < 2:
        return [None] * len(loads)
    first = next((i for i, load in enumerate(loads) if load.search is None), None)
    return [i == first for i in range(len(loads))]


def replay_s(load: LoadPlan) -> float:
    """The least time a trace workload's levels take: each replay at its scale takes the trace's duration /
    scale, every repeat, the recheck of the first level (two levels or more); a search's SEARCH_PROBES probes
    at its lowest (slowest) scale. 0 for any other workload (its time is its requests over a rate)."""
    trace = load.workload.trace if load.workload is not None else None
    if trace is None:
        return 0.0
    if load.search is not None:
        return SEARCH_PROBES * load.search.repeats * trace.duration_s / load.search.lower
    scales = list(load.time_scales)
    recheck = scales[:1] if len(scales) > 1 else []
    return sum(trace.duration_s / s for s in scales) * load.repeats + sum(
        trace.duration_s / s for s in recheck
    )


def estimate(
    specs: Sequence[BenchmarkSpec],
    lake: Lake | None,
    prices: Sequence[Price],
    region: str,
    mode: str,
    stated: Stated | None = None,
    slots: int = 1,
) -> list[ServerEstimate]:
    """Each planned server's estimate (see the module's docstring); `slots`: the benchmark pool's, how many
    of a type's pods start a node each (`node_starts`)."""
    now, stated = datetime.now(UTC), stated or Stated.from_env()
    try:
        rates, startups = _rates(lake, {s.matrix_key for s in specs}), _startups(lake, mode)
    except Exception as exc:  # an estimate never fails a plan: an unreadable lake leaves the stated figures
        log.warning(
            "the estimate uses stated figures: the lake could not be read (%s: %s)", type(exc).__name__, exc
        )
        rates, startups = {}, {}
    out = []
    first_of: dict[str, str] = {}  # group key -> its first spec's id: a server starts once for its workloads
    servers_of: dict[str, int] = {}  # instance type -> its servers so far
    groups = group_specs(specs)
    group_of = {group_key(s): g.group_id for g in groups for s in g.specs}
    again = {
        s.spec_id: r
        for g in groups
        for s, r in zip(g.specs, rechecks([s.load for s in g.specs]), strict=True)
    }
    for spec in specs:
        instance = spec.server.instance_type
        key = group_key(spec)
        started = first_of.setdefault(key, spec.spec_id)
        if started == spec.spec_id:
            earlier = servers_of.get(instance, 0)
            servers_of[instance] = earlier + 1
            startup_s, startup_from = startup_of(
                startups.get(instance), stated, node_starts(mode, slots, earlier)
            )
        else:
            startup_s, startup_from = 0.0, f"on {started}'s server"
        rate = rates.get(spec.matrix_key)
        price = price_at(prices, instance, region, "on_demand", now) if mode != "local" else None
        why = None
        if mode == "local":
            why = "local: not billed"
        elif price is None:
            why = f"no on-demand price of {instance} in {region}"
        out.append(
            ServerEstimate(
                spec_id=spec.spec_id,
                instance_type=instance,
                requests=requests_of(spec.load, again[spec.spec_id]),
                startup_s=startup_s,
                startup_from=startup_from,
                requests_per_s=rate if rate else stated.requests_per_s,
                rate_from="measured before" if rate else "stated",
                usd_per_hour=price.usd_per_hour if price else None,
                why_unpriced=why,
                replay_s=replay_s(spec.load),
                server=group_of[key],
            )
        )
    return out


def duration_s(estimates: Sequence[ServerEstimate], slots: int) -> float:
    """How long the servers take with `slots` of them at a time (the benchmark pool's): their seconds shared
    out over the slots, and never less than the longest server's (its workloads one after another)."""
    if not estimates:
        return 0.0
    servers: dict[str, float] = {}
    for i, e in enumerate(estimates):
        key = e.server or f"#{i}"
        servers[key] = servers.get(key, 0.0) + e.seconds
    seconds = list(servers.values())
    return max(sum(seconds) / max(1, min(slots, len(seconds))), max(seconds))


def request_servers(req: CampaignRequest) -> list[tuple[str, list[LoadPlan]]]:
    """The servers a request plans, before planning: one per instance type and checkpoint (an A/B
    comparison's: per variant and round), each with its workloads' load plans (`accelbench.campaign.load`),
    without the catalog or the model store; a type the plan refuses is still counted."""
    from accelbench.campaign.check import Checked
    from accelbench.campaign.load import build_load_plan, for_workload

    workloads = req.workload_specs()
    load, _ = build_load_plan(req, Checked([], [], None, workloads, req.search_plan()))
    loads = [for_workload(req, load, w) for w in workloads]
    if req.variants:  # an A/B comparison: a server per variant and round, each round its share of the repeats
        rounds = range(min(req.rounds, req.repeats))
        share = [load.model_copy(update={"repeats": -(-load.repeats // len(rounds))}) for load in loads]
        types = [v.instance_type or req.instance_types[0] for v in req.variants]
        return [(t, share) for _ in rounds for t in types]
    models = 1 + len(req.quantized_models)
    return [(t, loads) for t in req.instance_types for _ in range(models)]


def deadline_s(req: CampaignRequest, slots: int, stated: Stated, factor: float) -> float | None:
    """How long after it was queued a campaign run of `req` is late: `factor` times its estimated duration
    with the stated allowances (see the module's docstring; a type's node started by its first `slots`
    servers, `node_starts`); None: no deadline (`factor` 0)."""
    if factor <= 0:
        return None
    mode = req.execution_mode or default_mode()
    servers, seen = [], Counter[str]()
    for t, loads in request_servers(req):
        startup_s, startup_from = startup_of(None, stated, node_starts(mode, slots, seen[t]))
        seen[t] += 1
        requests = sum(requests_of(load, r) for load, r in zip(loads, rechecks(loads), strict=True))
        servers.append(
            ServerEstimate(
                "", t, requests, startup_s, startup_from, stated.requests_per_s, "stated", None, None
            )
        )
    return factor * duration_s(servers, slots)


def over_budget(estimates: Sequence[ServerEstimate], max_usd: float | None) -> Problem | None:
    """The refusal of a plan whose estimate is above `max_usd` (None: no limit)."""
    total = sum(e.usd for e in estimates)
    if max_usd is None or total <= max_usd:
        return None
    why = (
        f"the plan's estimate is {total:.2f} USD over {len(estimates)} server(s), above the limit: raise "
        "it, or plan fewer instance types, levels or repeats (the plan task's log lists each server)"
    )
    return Problem("max_campaign_usd", max_usd, why)


def _rates(lake: Lake | None, keys: set[str]) -> dict[str, float]:
    """The median request rate of the lake's measured runs of each matrix key."""
    if lake is None or not keys:
        return {}
    where = ds.field("matrix_key").isin(sorted(keys)) & (ds.field("status") == "ok")
    rows = lake.read("runs", where, columns=["matrix_key", "request_throughput"]).to_pylist()
    found: dict[str, list[float]] = {}
    for r in rows:
        if r["request_throughput"]:
            found.setdefault(r["matrix_key"], []).append(r["request_throughput"])
    return {k: statistics.median(v) for k, v in found.items()}


def _startups(lake: Lake | None, mode: str) -> dict[str, Startups]:
    """The lake's earlier servers of each instance type in `mode` (`Startups`): pod created (or process
    launched) to ready, which holds the node's launch where there was one (a little more than is billed
    before the first request, which starts at the node's launch). Kubernetes mode's start-ups on a node
    already up (no node launched for the pod, `node_launch_s` null) with the image on it (`kubelet_pull_s`
    0) are the warm ones; the others cold."""
    if lake is None:
        return {}
    rows = lake.read(
        "startups",
        ds.field("execution_mode") == mode,
        columns=["instance_type", "ready_s", "node_launch_s", "kubelet_pull_s"],
    ).to_pylist()
    cold: dict[str, list[float]] = {}
    warm: dict[str, list[float]] = {}
    for r in rows:
        if r["ready_s"] is None:
            continue
        on_node = mode == "kubernetes" and r["node_launch_s"] is None and r["kubelet_pull_s"] == 0
        (warm if on_node else cold).setdefault(r["instance_type"], []).append(r["ready_s"])
    return {
        t: Startups(
            statistics.median(cold[t]) if t in cold else None,
            statistics.median(warm[t]) if t in warm else None,
        )
        for t in {*cold, *warm}
    }
