"""How much a planned point's figures moved between repeats when the lake measured it before: the spread
planning turns into "with 2 repeats, p99 TTFT changes under +-15% cannot be told from noise on this host"
(`accelbench.core.changes.resolution_words`), the same words the report's "How much to measure" uses.

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
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.ingest import model_columns
from accelbench.lake.store import Lake

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
    server, load = spec.server, spec.load
    if load.search is not None:
        return {}
    planned = levels(spec)
    where = (
        (ds.field("instance_type") == server.instance_type)
        & (ds.field("model") == model_columns(server)["model"])
        & (ds.field("workload") == load.runs.name)
        & (ds.field("input_len") == load.input_len)
        & (ds.field("output_len") == load.output_len)
        & (ds.field("engine_args") == " ".join(server.extra_engine_args))
        & (ds.field("dtype") == server.dtype)
        & (ds.field("execution_mode") == execution_mode)
        & (ds.field("status") == "ok")
        & ds.field("level_kind").isin(sorted({level.kind for level in planned}))
    )
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
