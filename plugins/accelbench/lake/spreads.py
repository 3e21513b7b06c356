"""How much a planned point's figures moved between repeats when the lake measured it before: the spread
planning turns into "with 2 repeats, p99 TTFT changes under +-15% cannot be told from noise on this host"
(`accelbench.core.changes.resolution_words`), the same words the report's "How much to measure" uses.

A load search's p99s (`search_spreads`): the same configuration's earlier runs at one load in one campaign
(a probe measured again, the first probe and its recheck, repeats), pooled into the host's run-to-run
spread that widens the search's p99 intervals (`accelbench.search.statistics.host_spread`, issue 48).

The same point, for its noise: the same instance type, model, workload, lengths, engine arguments, data
type, execution mode and load level, from any campaign and any vLLM version (a new version's noise is not
known before it runs; the host's and the workload's are). Its spread is pooled within campaigns, as the
gate's test sees it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow.dataset as ds

from accelbench.core.changes import Spread, repeat_spread, resolution_words
from accelbench.core.levels import levels
from accelbench.core.search_plan import TAIL_LIMITS
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.ingest import model_columns
from accelbench.lake.store import Lake
from accelbench.search.statistics import run_spread

METRICS = {"p99_ttft_ms": "p99 TTFT", "output_throughput": "output tokens/s"}


@dataclass(frozen=True)
class EarlierSpread:
    """One level's spread of each metric in the lake, and what it came from."""

    spreads: Mapping[str, Spread | None]
    campaigns: int
    versions: tuple[str, ...]
    requests: int | None  # the fewest requests an earlier repeat completed


def earlier_spreads(lake: Lake, spec: BenchmarkSpec, execution_mode: str) -> dict[float, EarlierSpread]:
    """Per planned level value (a search's levels are not known before it runs: none), the spread of
    each metric over the lake's earlier ok runs of the same point, where it has a level of two repeats."""
    if spec.load.search is not None:
        return {}
    planned = levels(spec)
    kinds = sorted({level.kind for level in planned})
    where = _same_point(spec, execution_mode) & ds.field("level_kind").isin(kinds)
    columns = ["campaign_id", "level_value", "vllm_version", "completed", "recheck", *METRICS]
    rows = lake.read("runs", where=where, columns=columns).to_pylist()
    by_level: dict[float, dict[str, list[Mapping[str, object]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["recheck"]:  # the first level measured again at the end: not one of its repeats
            continue
        by_level[float(row["level_value"])][str(row["campaign_id"])].append(row)
    found = {}
    for level in planned:
        campaigns = by_level.get(float(level.value), {})
        spreads = {
            m: repeat_spread([[_number(r.get(m)) for r in group] for group in campaigns.values()])
            for m in METRICS
        }
        if any(spreads.values()):
            mine = [r for group in campaigns.values() for r in group]
            versions = tuple(sorted({str(r["vllm_version"]) for r in mine}))
            completed = [int(c) for r in mine if isinstance(c := r.get("completed"), int) and c > 0]
            found[float(level.value)] = EarlierSpread(
                spreads, len(campaigns), versions, min(completed) if completed else None
            )
    return found


def _same_point(spec: BenchmarkSpec, execution_mode: str) -> ds.Expression:
    """The lake's ok runs of `spec`'s point for its noise (see the module's docstring), any load level."""
    server, load = spec.server, spec.load
    return (
        (ds.field("instance_type") == server.instance_type)
        & (ds.field("model") == model_columns(server)["model"])
        & (ds.field("workload") == load.runs.name)
        & (ds.field("input_len") == load.input_len)
        & (ds.field("output_len") == load.output_len)
        & (ds.field("engine_args") == " ".join(server.extra_engine_args))
        & (ds.field("dtype") == server.dtype)
        & (ds.field("execution_mode") == execution_mode)
        & (ds.field("status") == "ok")
    )


def search_spreads(lake: Lake, spec: BenchmarkSpec, execution_mode: str) -> dict[str, list[Spread]]:
    """For a search's spec, the run-to-run spread of each limited p99 (keyed by the limit's label, "p99
    TTFT") over the lake's earlier runs of the same point at its search variable: the runs at one load in
    one campaign form a group (`run_spread`: pooled log variance, each group's runs less one as its df;
    their own sampling noise stays in, so it errs wide). Empty when the spec searches nothing or the lake
    has no load measured twice."""
    plan = spec.load.search
    if plan is None:
        return {}
    limits = [limit for limit in TAIL_LIMITS if getattr(plan.slos, limit.param) is not None]
    where = _same_point(spec, execution_mode) & (ds.field("level_kind") == plan.level_kind)
    columns = ["campaign_id", "level_value", *(limit.field for limit in limits)]
    rows = lake.read("runs", where=where, columns=columns).to_pylist()
    groups: dict[tuple[str, float], list[Mapping[str, object]]] = defaultdict(list)
    for row in rows:
        groups[(str(row["campaign_id"]), float(row["level_value"]))].append(row)
    found: dict[str, list[Spread]] = {}
    for limit in limits:
        values = [
            [v for r in group if (v := _number(r.get(limit.field))) is not None] for group in groups.values()
        ]
        spread = run_spread(values, limit.label)
        if spread.df:
            found[limit.label] = [spread]
    return found


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def resolution_lines(specs: Sequence[BenchmarkSpec], lake: Lake, execution_mode: str) -> list[str]:
    """What each planned spec's repeats and prompts can resolve, per level and metric, from the lake's
    earlier measurements of the same points; a line saying so when the lake has none."""
    lines = []
    for spec in specs:
        if spec.load.search is not None:
            continue
        found = earlier_spreads(lake, spec, execution_mode)
        where = f"{spec.spec_id} ({spec.server.instance_type})"
        if not found:
            lines.append(
                f"{where}: no earlier repeats of these points in the lake: how far their figures move "
                "between repeats on this host is not known until they run (the report's 'How much to "
                "measure' then says it)"
                + (
                    "; with repeats=1 no change can be tested against a spread between repeats: set repeats "
                    "to 2 or more"
                    if spec.load.repeats < 2
                    else f"; this campaign's {spec.load.repeats} repeats measure it"
                )
            )
            continue
        for value, earlier in sorted(found.items()):
            said = [
                resolution_words(name, spread, spec.load.repeats, spec.load.prompts_per_level)
                for metric, name in METRICS.items()
                if (spread := earlier.spreads.get(metric)) is not None
            ]
            of = f" of {earlier.requests:,} requests" if earlier.requests else ""
            lines.append(
                f"{where} at {value:g}: from the repeats{of} of {earlier.campaigns} earlier campaign(s) "
                f"(vLLM {', '.join(earlier.versions)}): " + "; ".join(said)
            )
    return lines
