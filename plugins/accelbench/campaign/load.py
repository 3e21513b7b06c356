"""Planning, stage 2: the load plan. One server configuration serves every workload of the campaign, so the
plan is sized for the longest prompts and outputs of any; each workload then gets its own copy with its
lengths (`for_workload`). A search chooses its own loads: the fixed levels are not measured."""

from __future__ import annotations

from typing import Any

from accelbench.campaign.check import Checked
from accelbench.campaign.request import CampaignRequest, SloName
from accelbench.core.problems import Problem
from accelbench.core.spec import GoodputMetric, LoadPlan
from accelbench.core.workloads import Workload

# CampaignRequest.slos key -> the goodput metric it limits
GOODPUT_METRIC: dict[SloName, GoodputMetric] = {
    "ttft_p99_ms": "ttft",
    "tpot_p99_ms": "tpot",
    "e2el_p99_ms": "e2el",
}


def build_load_plan(req: CampaignRequest, checked: Checked) -> tuple[LoadPlan, list[Problem]]:
    """The campaign's load plan, and what the campaign's tiers refuse of it."""
    longest = [w for w in checked.workloads if w is not None]
    search = checked.search
    prompts = req.prompts_per_level
    if search is not None and search.variable == "time_scale":
        # Each probe replays the whole trace: its count (a trace too short for the search is the check's
        # problem, already found: the plan is then never used).
        trace = next((w.trace for w in longest if w.trace is not None), None)
        prompts = max(trace.requests if trace else 0, search.min_requests)
    load = LoadPlan(
        input_len=max([req.input_len, *(w.max_input_len for w in longest)]),
        output_len=max([req.output_len, *(w.max_output_len for w in longest)]),
        seed=req.seed,
        level_warmups=req.level_warmups,
        concurrency=() if search else tuple(req.concurrency),
        request_rates=() if search else tuple(req.request_rates),
        burstiness=req.burstiness,
        search=search,
        prompts_per_level=prompts,
        repeats=req.repeats,
        goodput_slos_ms={GOODPUT_METRIC[k]: v for k, v in req.slos.items()},
    )
    problems = [p for w in longest for p in workload_problems(load, w)]
    return load, problems + [p for t in checked.tiers for p in t.load_problems(load)]


def workload_problems(load: LoadPlan, workload: Workload) -> list[Problem]:
    """The request counts a workload's dataset cannot send (`Workload.sends`): refused here, naming the
    field, rather than rounded, so that every workload of a campaign measures the count asked for and the
    driver's count check (every request recorded) keeps holding; a failed level would say it too late."""
    m = workload.request_multiple
    problems = []
    n = load.prompts_per_level
    if workload.sends(n) != n:
        near = " or ".join(str(c) for c in sorted({max(m, n // m * m), n // m * m + m}))
        why = (
            f"the {workload.name} workload's prompts come in {m} groups sharing a prefix and vLLM makes "
            f"(n // {m}) x {m} of them ({workload.sends(n)} here): every level would fail its request "
            f"count; use a multiple of {m} ({near})"
        )
        problems.append(Problem("prompts_per_level", n, why))
    counts = [c for c in _level_warmup_counts(load) if c]
    if counts and workload.sends(min(counts)) == 0:
        why = (
            f"{min(counts)} warm-up request(s) before a level: vLLM refuses fewer than {m} prompts of the "
            f"{workload.name} workload ({m} groups sharing a prefix); use 0 or at least {m}"
        )
        problems.append(Problem("level_warmups", load.level_warmups, why))
    return problems


def _level_warmup_counts(load: LoadPlan) -> list[int]:
    """The warm-up counts of the plan's levels (a search's smallest: its lower bound's)."""
    if load.search is not None:
        lowest = int(load.search.lower) if load.search.variable == "concurrency" else None
        return [load.level_warmup_count(lowest)]
    counts = [load.level_warmup_count(c) for c in load.concurrency]
    return counts + [load.level_warmup_count(None) for _ in load.request_rates[:1]]


def for_workload(req: CampaignRequest, load: LoadPlan, workload: Workload | None) -> LoadPlan:
    """The load plan of one workload: the campaign's levels and settings with the workload's lengths."""
    lengths: dict[str, Any] = {"input_len": req.input_len, "output_len": req.output_len, "range_ratio": 0.0}
    if workload is not None:
        lengths = {"input_len": workload.input_len, "output_len": workload.output_len}
        lengths |= {"range_ratio": workload.range_ratio, "workload": workload}
    if workload is not None and workload.dataset == "timed_trace":
        # A trace's levels are its time-scales, each the whole trace (before planning read it, for the
        # deadline's estimate: the request's count); a search keeps its own loads.
        if load.search is None:
            lengths |= {"concurrency": (), "request_rates": (), "time_scales": tuple(req.time_scales)}
        if workload.trace is not None:
            lengths["prompts_per_level"] = workload.trace.requests
    return LoadPlan.model_validate(load.model_dump() | lengths)
