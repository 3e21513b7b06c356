"""Refresh the price history: Pricing API + spot history online, the dated snapshot offline."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from sqlalchemy import Engine

from accelbench.aws.clients import PRICING_ENDPOINT_REGIONS, check_region, make_client
from accelbench.aws.offline import index_snapshots, load_snapshots
from accelbench.aws.pricing import ParseStats, PriceLookupError, fetch_on_demand
from accelbench.aws.spot import fetch_spot
from accelbench.catalog import queries
from accelbench.catalog.db import CatalogOpener
from accelbench.catalog.queries import store_prices
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.config import Settings, env_name
from accelbench.core.price import Price
from accelbench.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class RefreshReport:
    """Counts per (instance type, region, pricing model) lookup, with the reason for each miss."""

    priced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    stored: int = 0
    malformed_documents: int = 0
    zero_prices: int = 0
    non_hourly_dimensions: int = 0

    def summary(self) -> str:
        return (
            f"priced {len(self.priced)} / skipped {len(self.skipped)} / failed {len(self.failed)}; "
            f"{self.stored} new history rows, {self.zero_prices} zero prices skipped, "
            f"{self.non_hourly_dimensions} non-hourly price dimensions skipped, "
            f"{self.malformed_documents} malformed price documents skipped"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "priced": len(self.priced),
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            "stored": self.stored,
            "zero_prices": self.zero_prices,
            "non_hourly_dimensions": self.non_hourly_dimensions,
            "malformed_documents": self.malformed_documents,
            "failures": self.failed,
            "skips": self.skipped,
        }


def _given(price: Price) -> Price:
    """A lookup that already has its answer (the offline snapshots)."""
    return price


def _record(
    engine: Engine,
    report: RefreshReport,
    key: str,
    lookup: Callable[[], Price],
    fetched_at: datetime,
) -> None:
    try:
        price = lookup()
    except PriceLookupError as exc:
        (report.skipped if exc.skip else report.failed).append(f"{key}: {exc}")
        (log.info if exc.skip else log.error)("%s: %s", key, exc)
        return
    except (ClientError, BotoCoreError) as exc:
        report.failed.append(f"{key}: {exc}")
        log.error("%s: AWS call failed: %s", key, exc)
        return
    new = store_prices(engine, [price], fetched_at)
    report.priced.append(key)
    report.stored += new
    log.info(
        "%s: %.5f USD/h effective %s%s",
        key,
        price.usd_per_hour,
        price.effective_at.date(),
        "" if new else " (already stored)",
    )


def refresh_online(
    engine: Engine,
    session: Any,
    specs: list[InstanceSpec],
    regions: list[str],
    *,
    pricing_region: str = "us-east-1",
    max_attempts: int = 8,
    now: datetime | None = None,
    pricing_client: Any = None,
    ec2_clients: dict[str, Any] | None = None,
) -> RefreshReport:
    """On-demand and spot for every type x region; one failing lookup never stops the others."""
    now = now or datetime.now(UTC)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for region in regions:
        check_region(region, "regions")
    if pricing_region not in PRICING_ENDPOINT_REGIONS:
        raise ConfigError(
            env_name("pricing_endpoint_region"),
            pricing_region,
            f"the Pricing API is served only from {', '.join(PRICING_ENDPOINT_REGIONS)}",
        )
    report = RefreshReport()
    pricing = pricing_client or make_client(session, "pricing", pricing_region, max_attempts)
    for region in regions:
        ec2 = (ec2_clients or {}).get(region) or make_client(session, "ec2", region, max_attempts)
        for spec in specs:
            name = spec.instance_type
            stats = ParseStats()
            _record(
                engine,
                report,
                f"{name} {region} on_demand",
                functools.partial(fetch_on_demand, pricing, name, region, stats),
                now,
            )
            report.zero_prices += stats.zero_prices
            report.non_hourly_dimensions += len(stats.non_hourly)
            report.malformed_documents += len(stats.malformed)
            _record(
                engine,
                report,
                f"{name} {region} spot",
                functools.partial(fetch_spot, ec2, name, region, day),
                now,
            )
    log.info("pricing refresh (AWS): %s", report.summary())
    return report


def refresh_offline(
    engine: Engine, specs: list[InstanceSpec], regions: list[str], now: datetime | None = None
) -> RefreshReport:
    """Prices from the shipped snapshots, each row labelled with its own snapshot's source and date."""
    now = now or datetime.now(UTC)
    for region in regions:
        check_region(region, "regions")
    snaps = load_snapshots()
    index = index_snapshots(snaps)
    covered = sorted({s.region for s in snaps})
    for loaded in snaps:
        log.info("pricing offline from %s", loaded.label)
    report = RefreshReport()
    for region in regions:
        for spec in specs:
            key = f"{spec.instance_type} {region} on_demand"
            snap = index.get((region, spec.instance_type))
            if snap is None:
                why = (
                    f"the offline snapshot covers {', '.join(covered)} only"
                    if region not in covered
                    else "not in the offline snapshots"
                )
                report.skipped.append(f"{key}: {why}")
                log.info("%s: skipped, %s", key, why)
                continue
            usd = snap.prices[spec.instance_type]
            price = Price(spec.instance_type, region, "on_demand", usd, snap.effective_at, snap.label)
            _record(engine, report, key, functools.partial(_given, price), now)
    log.info("pricing refresh (offline): %s", report.summary())
    return report


@dataclass(frozen=True)
class PriceRefresh:
    """A refresh of the catalog's prices, as the pricing DAG's task calls it: its report, or why it failed
    (`failure`: nothing to price, no credentials where they were required, or nothing priced)."""

    report: RefreshReport | None = None
    failure: str | None = None

    def xcom(self) -> dict[str, Any]:
        """What the pricing task returns: the report's counts."""
        if self.report is None:
            raise ValueError(f"no report: {self.failure}")
        return self.report.to_dict()


def refresh_prices(
    catalog: CatalogOpener,
    settings: Settings,
    regions: list[str],
    instance_types: list[str],
    offline: bool | None,
    session: Callable[[], Any],
) -> PriceRefresh:
    """Price `instance_types` (none: the whole catalog) in `regions` (none: ACCELBENCH_REGIONS): from the
    Pricing API and spot history with the AWS `session()` gives, or from the offline snapshot when it gives
    none (or `offline`); `offline=False` requires a session."""
    regions = regions or list(settings.aws.regions)
    for region in regions:
        check_region(region, "regions")
    with catalog() as engine:
        specs = queries.instance_specs(engine, instance_types or None)
        if not specs:
            empty = "the instance catalog is empty: run accelbench_instance_catalog first"
            return PriceRefresh(failure=empty)
        aws = None if offline else session()
        if aws is None:
            if offline is False:
                return PriceRefresh(failure="offline=false but no AWS credentials were found")
            report = refresh_offline(engine, specs, regions)
        else:
            report = refresh_online(
                engine,
                aws,
                specs,
                regions,
                pricing_region=settings.aws.pricing_endpoint_region,
                max_attempts=settings.aws.aws_max_attempts,
            )
    log.info("pricing refresh done: %s", report.summary())
    if not report.priced:
        return PriceRefresh(report, failure=f"priced nothing: {report.summary()}")
    return PriceRefresh(report)
