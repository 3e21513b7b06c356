"""`accelbench` command: inspect the catalog, print the lake's Athena DDL, import quality results, and make
timed traces (the DAGs do the campaigns' writing)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from accelbench import tiers
from accelbench.catalog import queries
from accelbench.catalog.db import make_engine, redact
from accelbench.config import LAKE_SETTING, Settings
from accelbench.errors import AccelbenchError
from accelbench.lake import athena
from accelbench.lake.imported_quality import QualityTarget, import_quality
from accelbench.lake.store import Lake
from accelbench.lake.traces import run_trace
from accelbench.traces import builders, timed_trace


def show(settings: Settings) -> None:
    engine = make_engine(settings.catalog.catalog_url)
    try:
        specs = queries.instance_specs(engine)
        prices = queries.latest_prices(engine)
    finally:
        engine.dispose()
    print(f"catalog {redact(settings.catalog.catalog_url)}")
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


def write_trace(made: list[timed_trace.TraceRequest], out: Path) -> None:
    """Write a trace and say what it is (its identity, as the lake will record it)."""
    text = timed_trace.dumps(made)
    out.write_text(text)
    found = timed_trace.identity(text, made)
    print(
        f"wrote {out}: {found['trace_requests']} requests over {found['trace_duration_s']:.1f} s "
        f"({found['trace_mean_rate']:.2f} req/s), input p50/p99 {found['trace_input_p50']:.0f}/"
        f"{found['trace_input_p99']:.0f} tokens, output p50/p99 {found['trace_output_p50']:.0f}/"
        f"{found['trace_output_p99']:.0f}, sha256 {found['trace_sha256']}"
    )


def _trace_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    trace = sub.add_parser(
        "trace", help="make a timed trace (vLLM's timed-trace JSONL): lengths and times only"
    )
    kinds = trace.add_subparsers(dest="source", required=True)
    usage = kinds.add_parser(
        "usage", help="from a usage log: CSV (with a header) or JSONL, one request a row"
    )
    usage.add_argument("log", type=Path)
    usage.add_argument("--timestamp", required=True, help="the column of each request's time")
    usage.add_argument("--prompt-tokens", required=True, help="the column of its prompt tokens")
    usage.add_argument("--completion-tokens", required=True, help="the column of its completion tokens")
    usage.add_argument("--window-s", type=float, help="keep only the busiest window of this many seconds")
    lake = kinds.add_parser("lake", help="from the lake's requests of one earlier run (one level's repeat)")
    lake.add_argument("--run-id", required=True)
    lake.add_argument("--lake", help=f"the lake (default: {LAKE_SETTING})")
    made = kinds.add_parser("generate", help="a generated day (the one the project ships is --seed 0)")
    made.add_argument("--seed", type=int, default=0)
    made.add_argument("--minutes", type=float, default=0.5, help="the day squeezed into (default: 0.5)")
    made.add_argument("--rate", type=float, default=2.0, help="its mean rate, req/s (default: 2)")
    for p in (usage, lake, made):
        p.add_argument("--out", type=Path, required=True, help="the trace's file (JSONL)")


def make_trace(args: argparse.Namespace) -> None:
    if args.source == "usage":
        rows = builders.read_rows(args.log)  # a file here; the DAG reads S3 too (accelbench.lake.traces)
        made = builders.from_usage(
            rows, args.timestamp, args.prompt_tokens, args.completion_tokens, args.window_s
        )
    elif args.source == "lake":
        made = run_trace(Lake(args.lake) if args.lake else Lake.from_env(), args.run_id)
    else:
        made = builders.generated_day(args.seed, args.minutes, args.rate)
    write_trace(made, args.out)


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
    quality = sub.add_parser(
        "import-quality",
        help="import an lm-eval results JSON into the lake's quality table, joined to a configuration",
    )
    quality.add_argument("results", type=Path, help="the results_<date>.json lm-eval wrote (--output_path)")
    quality.add_argument("--model", required=True, help="the model id of the configuration it measured")
    quality.add_argument("--reference-model", required=True, help="the reference configuration's model id")
    quality.add_argument("--reference", type=Path, help="the reference's results JSON of the same task")
    quality.add_argument("--accelerator-type", required=True, choices=tiers.names(), help="its tier")
    quality.add_argument("--instance-type", help="the instance type that served it")
    quality.add_argument("--quantization", help="its quantization (e.g. compressed-tensors W8A8)")
    quality.add_argument("--vllm-version", help="the vLLM version that served it")
    quality.add_argument("--task", help="the file's task to import (default: its only one)")
    quality.add_argument("--metric", help="the task's metric, e.g. acc,none (default: its only one)")
    quality.add_argument("--lake", help=f"the lake (default: {LAKE_SETTING})")
    _trace_parsers(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "show":
            show(Settings.from_env())
        elif args.command == "ddl":
            print_ddl(args.lake, args.database)
        elif args.command == "import-quality":
            target = QualityTarget(
                model=args.model,
                reference_model=args.reference_model,
                accelerator_type=args.accelerator_type,
                instance_type=args.instance_type,
                quantization=args.quantization,
                vllm_version=args.vllm_version,
                task=args.task,
                metric=args.metric,
            )
            lake = Lake(args.lake) if args.lake else Lake.from_env()
            row = import_quality(lake, args.results, target, args.reference)
            what = f"accuracy {row['accuracy']:.1%} of {row['questions']} questions"
            print(f"imported {row['task']}: {what}, into {lake.uri}")
        elif args.command == "trace":
            make_trace(args)
    except AccelbenchError as exc:
        print(f"accelbench: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
