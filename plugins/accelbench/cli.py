"""`accelbench` command: inspect the catalog and print the lake's Athena DDL (the DAGs do the writing)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from accelbench import tiers
from accelbench.catalog import queries
from accelbench.catalog.db import make_engine, redact
from accelbench.config import LAKE_SETTING, Settings
from accelbench.errors import AccelbenchError
from accelbench.lake import athena
from accelbench.lake.store import Lake


def show(settings: Settings) -> None:
    engine = make_engine(settings.catalog_url)
    try:
        specs = queries.instance_specs(engine)
        prices = queries.latest_prices(engine)
    finally:
        engine.dispose()
    print(f"catalog {redact(settings.catalog_url)}")
    by_tier = Counter(s.accelerator_type for s in specs)
    print(f"instance types: {len(specs)} ({', '.join(f'{k} {v}' for k, v in sorted(by_tier.items()))})")
    cpu = [s for s in specs if s.accelerator_type == tiers.CPU.name]
    by_gen = Counter(s.generation for s in cpu)
    print("  cpu generations: " + ", ".join(f"{k} {v}" for k, v in sorted(by_gen.items())))
    two_numa = [s.instance_type for s in cpu if tiers.CPU.ranks(s).limit > 1]
    print(f"  2-NUMA cpu types: {', '.join(two_numa)}")
    print(f"latest prices: {len(prices)}")
    print(f"  {'instance_type':<18}{'region':<12}{'model':<11}{'USD/h':>10}  effective   source")
    for p in prices:
        print(
            f"  {p.instance_type:<18}{p.region:<12}{p.pricing_model:<11}{p.usd_per_hour:>10.5f}  "
            f"{p.effective_at:%Y-%m-%d}  {p.source[:80]}"
        )


def print_ddl(lake_uri: str | None, database: str) -> None:
    """The Athena DDL of the lake at --lake, else at the configured lake; a local lake is refused."""
    lake = Lake(lake_uri) if lake_uri else Lake.from_env()
    location = athena.check_location(lake.uri, "--lake" if lake_uri else LAKE_SETTING)
    print(athena.ddl(location, tiers.names(), athena.check_database(database)), end="")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="accelbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("show", help="print the instance catalog and the newest prices")
    ddl = sub.add_parser(
        "ddl",
        help="print the Athena DDL of the lake's tables (partition projection: no MSCK REPAIR)",
    )
    ddl.add_argument("--lake", help=f"the lake, s3://bucket/prefix (default: {LAKE_SETTING})")
    ddl.add_argument(
        "--database", default=athena.DEFAULT_DATABASE, help="Athena database (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "show":
            show(Settings.from_env())
        elif args.command == "ddl":
            print_ddl(args.lake, args.database)
    except AccelbenchError as exc:
        print(f"accelbench: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
