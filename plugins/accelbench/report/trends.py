"""Each configuration's best level under the SLOs campaign by campaign: what the trends view draws.

A report's points pool a configuration's repeats from every campaign (`accelbench.report.points`); a trend
needs each campaign's own. A series is a configuration less its vLLM version (so a version change is a
step of the series, marked) on one workload and host; only series measured by two or more campaigns have
a trend, and only their runs are made into points again, campaign by campaign, priced at each campaign's
time (so a price change shows, marked too). A lake of one campaign costs nothing more to report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from accelbench.core.price import Price
from accelbench.core.slos import Slos
from accelbench.lake.schemas import MEASURED_STATUSES, LakeRow
from accelbench.report.builder import build_points
from accelbench.report.keys import CONFIG_KEY, key_value, short_id
from accelbench.report.model import INLINE, Configuration, Point
from accelbench.report.samples import Samples
from accelbench.report.slos import BestPoint, best_under_slos

SERIES_KEY = tuple(k for k in CONFIG_KEY if k != "vllm_version")
MIN_CAMPAIGNS = 2  # fewer is a point, not a trend


@dataclass(frozen=True)
class TrendPoint:
    """A series' best level under the SLOs in one campaign. `campaign_date`: the day (ISO) of the
    campaign's first kept run; `vllm_change` / `price_change`: what differs from the series' campaign
    before ("0.31.0 → 0.32.0", "0.18 → 0.20 USD/h on-demand"), None when nothing does."""

    campaign_id: str
    campaign_date: str
    series_id: str
    vllm_change: str | None
    price_change: str | None
    best: BestPoint = field(metadata=INLINE)


def _series(run: LakeRow) -> tuple[Any, ...]:
    return tuple(str(key_value(run, k)) for k in SERIES_KEY)


def _price(best: BestPoint) -> float | None:
    return best.point.on_demand.usd_per_hour


def _changes(previous: BestPoint | None, now: BestPoint) -> tuple[str | None, str | None]:
    if previous is None:
        return None, None
    before, after = previous.point.config.vllm_version, now.point.config.vllm_version
    version = f"{before} → {after}" if before != after else None
    was, price = _price(previous), _price(now)
    priced = f"{was:g} → {price:g} USD/h on-demand" if None not in (was, price) and was != price else None
    return version, priced


def trend_points(
    runs: Iterable[LakeRow], prices: Sequence[Price], region: str, slos: Slos, samples: Samples | None = None
) -> list[TrendPoint]:
    """Per series measured by MIN_CAMPAIGNS campaigns or more, its best level under `slos` in each campaign
    (its best configuration there, when two versions ran in one), by series then date."""
    measured = [r for r in runs if r.get("status") in MEASURED_STATUSES]
    campaigns: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for r in measured:
        campaigns[_series(r)].add(str(r.get("campaign_id")))
    trending = {s for s, ids in campaigns.items() if len(ids) >= MIN_CAMPAIGNS}
    if not trending:
        return []
    began: dict[str, str] = {}
    for r in measured:
        day = r["started_at"].date().isoformat()
        cid = str(r.get("campaign_id"))
        began[cid] = min(began.get(cid, day), day)
    by_campaign: dict[str, list[LakeRow]] = defaultdict(list)
    for r in measured:
        if _series(r) in trending:
            by_campaign[str(r.get("campaign_id"))].append(r)
    found: dict[tuple[Any, ...], list[tuple[str, str, BestPoint]]] = defaultdict(list)
    for cid in sorted(by_campaign, key=lambda c: (began[c], c)):
        points = build_points(by_campaign[cid], prices, region, slos, samples)
        best: dict[tuple[Any, ...], BestPoint] = {}
        for b in best_under_slos(points, slos):  # cheapest first: one per series (two versions in one)
            best.setdefault(_series_of_point(b.point), b)
        for key, b in best.items():
            found[key].append((cid, began[cid], b))
    out = []
    for key in sorted(found, key=str):
        previous = None
        series_id = _short(key)
        for cid, day, b in found[key]:
            version, price = _changes(previous, b)
            out.append(TrendPoint(cid, day, series_id, version, price, b))
            previous = b
    return out


def _series_of_point(p: Point) -> tuple[Any, ...]:
    """A point's series key: its configuration's fields (`CONFIG_KEY`'s, in order) less the version."""
    return tuple(str(getattr(p.config, f.name)) for f in fields(Configuration) if f.name != "vllm_version")


def _short(key: tuple[Any, ...]) -> str:
    return short_id(dict(zip(SERIES_KEY, key, strict=True)))
