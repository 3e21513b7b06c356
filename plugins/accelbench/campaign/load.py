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
    load = LoadPlan(
        input_len=max([req.input_len, *(w.max_input_len for w in longest)]),
        output_len=max([req.output_len, *(w.max_output_len for w in longest)]),
        seed=req.seed,
        level_warmups=req.level_warmups,
        concurrency=() if search else tuple(req.concurrency),
        request_rates=() if search else tuple(req.request_rates),
        burstiness=req.burstiness,
        search=search,
        prompts_per_level=req.prompts_per_level,
        repeats=req.repeats,
        goodput_slos_ms={GOODPUT_METRIC[k]: v for k, v in req.slos.items()},
    )
    return load, [p for t in checked.tiers for p in t.load_problems(load)]


def for_workload(req: CampaignRequest, load: LoadPlan, workload: Workload | None) -> LoadPlan:
    """The load plan of one workload: the campaign's levels and settings with the workload's lengths."""
    lengths: dict[str, Any] = {"input_len": req.input_len, "output_len": req.output_len, "range_ratio": 0.0}
    if workload is not None:
        lengths = {"input_len": workload.input_len, "output_len": workload.output_len}
        lengths |= {"range_ratio": workload.range_ratio, "workload": workload}
    return LoadPlan.model_validate(load.model_dump() | lengths)
