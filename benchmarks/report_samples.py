"""What the report's latency intervals cost: reading the kept runs' request samples and building the report
with them, at 10^5..10^7 request rows, against building it from the runs rows alone.

Run: .venv/bin/python benchmarks/report_samples.py [--rows 100000,1000000] [--per-run 10000] [--runs 3]

Input: a lake (benchmarks/.cache/report_samples/<rows>/, made once with a fixed seed) of `rows` requests in
runs of `--per-run` requests each (lognormal TTFT/E2EL, 2% failed), three repeats per level, as
accelbench.lake.ingest.request_table writes them, and the matching `runs` rows. Each measurement is a fresh
process pinned to one CPU (PyArrow limited to one thread); it reports wall time and its own peak RSS:

  runs only      build_report from the runs rows (repeat-level intervals only)
  with samples   read_samples of every run + build_report with them (what the report DAG task does)
  page           "with samples" priced (one on-demand price), then write_report into a scratch lake: the
                 tables' files, the HTML page and its charts' static SVGs (the whole report task less the
                 catalog); `page KiB` is the HTML page's size

Printed: seconds, peak RSS and the samples' bytes (3 float64 arrays per run: 24 bytes per request), the
median of --runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "benchmarks" / ".cache" / "report_samples"
DATE = "2026-11-10"
CPU = 0


def _runs(rows: int, per_run: int) -> list[dict]:
    """The runs rows: three repeats per concurrency level, one configuration."""
    start = datetime(2026, 11, 10, tzinfo=UTC)
    out = []
    for i in range(rows // per_run):
        level, repeat = divmod(i, 3)
        out.append(
            {
                "run_id": f"run-{i:06d}",
                "campaign_id": "bench",
                "spec_id": "spec",
                "status": "ok",
                "accelerator_type": "cpu",
                "date": DATE,
                "instance_type": "m8g.xlarge",
                "model": "org/model",
                "vllm_version": "0.32.0",
                "level_kind": "concurrency",
                "level_value": float(level + 1),
                "repeat": repeat,
                "started_at": start + timedelta(minutes=i),
                "completed": per_run,
                "failed": 0,
                "request_throughput": 10.0 + repeat,
                "output_throughput": 320.0 + 10 * repeat,
                "total_token_throughput": 1600.0,
                "p99_ttft_ms": 400.0 + repeat,
                "p99_tpot_ms": 20.0,
                "p99_e2el_ms": 1000.0,
                "dataset": "random",
                "input_len": 128,
                "output_len": 32,
                "tensor_parallel_size": 1,
                "execution_mode": "kubernetes",
                "measured_on_instance": True,
            }
        )
    return out


def make_lake(rows: int, per_run: int) -> Path:
    """The cached lake of `rows` requests (made once)."""
    from accelbench.lake.ingest import request_table
    from accelbench.lake.store import Lake

    root = CACHE / f"{rows}-{per_run}"
    if (root / "runs.json").is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    lake = Lake(str(root / "lake"))
    rng = np.random.default_rng(0)
    runs = _runs(rows, per_run)
    for run in runs:
        ttft = rng.lognormal(np.log(0.3), 0.4, per_run)
        result = {
            "ttfts": ttft,
            "latencies": ttft + rng.lognormal(np.log(0.7), 0.2, per_run),
            "itls": [[]] * per_run,
            "input_lens": [128] * per_run,
            "output_lens": [32] * per_run,
            "errors": np.where(rng.random(per_run) < 0.02, "timeout", "").tolist(),
        }
        table = request_table(result, run["run_id"], "bench", "spec")
        lake.write_table("requests", table, "cpu", DATE, run["run_id"])
    (root / "runs.json").write_text(json.dumps(runs, default=str))
    return root


def child(mode: str, root: Path) -> None:
    import tempfile

    import pyarrow as pa
    from accelbench.core.price import Price
    from accelbench.lake.store import Lake
    from accelbench.report.build import HTML_NAME, ReportFilter, build_report, write_report
    from accelbench.report.samples import read_samples

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    runs = json.loads((root / "runs.json").read_text())
    for r in runs:
        r["started_at"] = datetime.fromisoformat(r["started_at"])
    prices = []
    if mode == "page":
        prices = [
            Price("m8g.xlarge", "us-east-1", "on_demand", 0.18, datetime(2026, 7, 1, tzinfo=UTC), "bench")
        ]
    flt = ReportFilter(ttft_p99_ms=2000)
    page_bytes = 0
    began = time.perf_counter()
    samples = None
    if mode in ("with samples", "page"):
        samples = read_samples(Lake(str(root / "lake")), [r["run_id"] for r in runs])
    tables = build_report(runs, prices, [], flt, samples=samples)
    if mode == "page":
        with tempfile.TemporaryDirectory() as scratch:
            written = write_report(Lake(scratch), "20261110T000000Z", tables, flt, len(runs))
            page_bytes = Path(written[HTML_NAME].removeprefix("file://")).stat().st_size
    wall = time.perf_counter() - began
    held = sum(
        (0 if d.values is None else d.values.nbytes) + (0 if d.bins is None else d.bins.nbytes)
        for m in (samples.by_run.values() if samples else [])
        for d in m.values()
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "wall_s": wall,
                "peak_bytes": peak,
                "samples_bytes": held,
                "points": len(tables["points"]),
                "page_bytes": page_bytes,
            }
        )
    )


def measure(mode: str, root: Path) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, str(root)]
    if hasattr(os, "sched_setaffinity"):
        cmd = ["taskset", "-c", str(CPU), *cmd]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", default="100000,1000000")
    parser.add_argument("--per-run", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="runs only,with samples,page")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    print(
        f"{'rows':>10} {'mode':>13} {'s':>7} {'peak MiB':>9} {'samples MiB':>12} {'points':>7} "
        f"{'page KiB':>9}"
    )
    for rows in (int(r) for r in args.rows.split(",")):
        root = make_lake(rows, args.per_run)
        for mode in args.modes.split(","):
            found = [measure(mode, root) for _ in range(args.runs)]
            wall = statistics.median(f["wall_s"] for f in found)
            peak = statistics.median(f["peak_bytes"] for f in found) / 2**20
            held = found[0]["samples_bytes"] / 2**20
            page = found[0]["page_bytes"] / 2**10
            print(
                f"{rows:>10} {mode:>13} {wall:>7.2f} {peak:>9.0f} {held:>12.1f} {found[0]['points']:>7} "
                f"{page:>9.0f}"
            )


if __name__ == "__main__":
    main()
