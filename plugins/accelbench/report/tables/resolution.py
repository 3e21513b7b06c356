"""How much to measure: per point, how far its figures move between repeats on its host, the smallest
change the regression gate's test resolves with that many repeats, and the repeats that would resolve
+-10% (`accelbench.core.changes`: `repeat_spread`, `resolvable`, `repeats_to_resolve`). A point measured
once shows no spread: it is not listed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from accelbench.core.changes import (
    Spread,
    repeat_spread,
    repeats_to_resolve,
    resolution_words,
    resolvable,
)
from accelbench.report.keys import POINT_KEY
from accelbench.report.labels import configuration_label
from accelbench.report.model import INLINE, Point, PointKey, prefixed
from accelbench.report.noise import NAMES, noise_words, runs_by_id
from accelbench.report.records import records
from accelbench.report.table import Inputs, Section, Table

RESOLUTION_METRICS = ("p99_ttft_ms", "output_throughput")
TARGET = 0.10  # the change the "repeats for" column is for: +-10%


@dataclass(frozen=True, slots=True)
class MetricResolution:
    """A metric's spread between repeats, the smallest change the point's repeats resolve, the repeats
    that would resolve +-10%, and all of it in words (`resolution_words`); None without a spread."""

    spread: float | None = None
    resolves: float | None = None
    repeats_for_10pct: int | None = None
    resolution: str | None = None


@dataclass(frozen=True, slots=True)
class Resolution:
    """How much to measure at one point: how many campaigns and repeats measured it, and per metric what
    they resolve (written under the metric's name)."""

    key: PointKey = field(metadata=INLINE)
    configuration: str
    model_short: str | None
    level: str | None
    point_id: str | None
    campaigns: int
    repeats: int
    requests: int | None
    p99_ttft_ms: MetricResolution = field(metadata=prefixed("p99_ttft_ms_"))
    output_throughput: MetricResolution = field(metadata=prefixed("output_throughput_"))


def metric_resolution(
    metric: str, spread: Spread | None, repeats: int, requests: int | None
) -> MetricResolution:
    """What `repeats` of `requests` resolve of `metric` on a host with this spread."""
    if spread is None:
        return MetricResolution()
    return MetricResolution(
        spread=spread.relative,
        resolves=resolvable(spread, repeats),
        repeats_for_10pct=repeats_to_resolve(spread, TARGET),
        resolution=resolution_words(NAMES[metric], spread, repeats, requests, TARGET),
    )


def resolution(
    points: Sequence[Point | Mapping[str, Any]], runs: Sequence[Mapping[str, Any]]
) -> list[Resolution]:
    """One row per point measured at least twice in one campaign: each metric's spread between repeats,
    pooled within campaigns (the spread the gate's test sees on each side; a host that changed between
    campaigns is the gate's finding, not noise), and what the point's own repeat count resolves."""
    by_id = runs_by_id(runs)
    rows = []
    for p in records(points):  # a point's columns as the files hold them: its tests give a few by hand
        mine = [by_id[r] for r in p.get("run_ids") or () if r in by_id]
        by_campaign: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for run in mine:
            by_campaign[str(run.get("campaign_id"))].append(run)
        spreads = {
            m: repeat_spread([[r.get(m) for r in group] for group in by_campaign.values()])
            for m in RESOLUTION_METRICS
        }
        if not any(spreads.values()):
            continue
        # What one campaign measures at this point: its repeats, and the fewest requests one completed.
        repeats = max(len(group) for group in by_campaign.values())
        completed = [r["completed"] for r in mine if r.get("completed")]
        requests = min(completed) if completed else None
        found = {m: metric_resolution(m, spreads[m], repeats, requests) for m in RESOLUTION_METRICS}
        rows.append(
            Resolution(
                key=PointKey(**{k: p.get(k) for k in POINT_KEY}),
                configuration=configuration_label(p),
                model_short=p.get("model_short"),
                level=p.get("level"),
                point_id=p.get("point_id"),
                campaigns=len(by_campaign),
                repeats=repeats,
                requests=requests,
                p99_ttft_ms=found["p99_ttft_ms"],
                output_throughput=found["output_throughput"],
            )
        )
    return sorted(
        rows, key=lambda r: (r.model_short or "", str(r.key.workload), r.configuration, r.key.host or "")
    )


def _rows(inputs: Inputs) -> list[Resolution]:
    return resolution(inputs.points, inputs.runs)


def _words(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return noise_words() | {"target": f"±{TARGET:.0%}"}


TABLE = Table(
    name="resolution",
    row=Resolution,
    compute=_rows,
    columns=(
        "model_short",
        "workload",
        "configuration",
        "host",
        "level",
        "campaigns",
        "repeats",
        "requests",
        "p99_ttft_ms_resolution",
        "output_throughput_resolution",
    ),
    section=Section(
        unmeasured="`repeats` of 2 or more",
        heading="How much to measure",
        anchor="resolution",
        table_id="resolution-table",
        variables=_words,
        text="""\
<p>How far each point's p99 TTFT and output throughput move between repeats on the host that measured
them, and so the smallest change between two versions (or two settings) measured like this that the
regression gate's test can tell from noise: the half-width of the change's {{ confidence }} interval, t on
2 &times; repeats &minus; 2 degrees of freedom &times; the spread of the repeats' logarithms (pooled
within campaigns) &times; &radic;(2 / repeats). A change is an alarm only beyond {{ min_effect }} as well.
More repeats narrow it (the t factor falls from 4.3 at 2 repeats to 2.3 at 5); more requests per repeat
narrow only the part of a percentile's spread that comes from its own requests, not the host's. The last
words say how many repeats would resolve {{ target }}. The spread is itself estimated from the repeats: from
two repeats of one campaign it rests on one degree of freedom and is rough (the "Repeats" and "Campaigns"
columns say what it rests on); every later campaign of the point sharpens it. A point measured once per
campaign shows no spread and is not listed; set <code>repeats</code> to 2 or more in the campaign
form.</p>""",
    ),
)
