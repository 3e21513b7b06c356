"""Ingest and aggregation at 10^4..10^7 request rows: this suite vs straightforward pandas vs DuckDB.

Run: .venv/bin/python benchmarks/ingest_scaling.py [--rows 10000,100000,1000000,10000000] [--runs 3]

Input: raw evidence as campaigns leave it (benchmarks/.cache/ingest/<rows>/, generated once with a fixed
seed): one envelope and `vllm bench serve --save-detailed` result files of up to 100,000 requests each
(7 inter-token gaps per request). Each implementation turns them into the `requests` table (per request:
tokens, TTFT, E2EL, TPOT, ITL mean/p50/p99/max, errors) and the `runs` table (one row per result file, its
aggregates) as Parquet, and this suite also builds the report's tables from `runs`:

  suite   accelbench.lake.ingest.ingest_raw (+ the report's build_report on the runs it wrote)
  pandas  json.load + DataFrame per file, ITL statistics by groupby on the exploded gaps, to_parquet
  duckdb  one SQL statement per table over read_json of the same files (threads=1), COPY ... TO parquet

Each measurement is a fresh process pinned to one CPU (PyArrow and DuckDB limited to one thread); it
reports wall time and its own peak RSS. Printed: rows per second and peak memory (median of --runs), the
ratio to DuckDB in the same run, and rows/s at each size relative to the smallest (linear = constant).
Target (issue 8): within 2x of DuckDB and linear in rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "benchmarks" / ".cache" / "ingest"
PER_FILE = 100_000
OUTPUT_LEN = 8
CPU = 0
TARGET_RATIO = 2.0
DATE, CAMPAIGN, SPEC_ID = "2026-12-01", "scaling", "m8g-xlarge-000000000000"


# ---- input ---------------------------------------------------------------------------------------


def _result(rng: np.random.Generator, n: int) -> dict:
    ttft = rng.gamma(4.0, 0.02, n)
    itls = rng.gamma(6.0, 0.004, (n, OUTPUT_LEN - 1))
    e2el = ttft + itls.sum(axis=1)
    starts = np.sort(rng.uniform(0, n / 50, n))
    errors = np.where(rng.random(n) < 0.001, "Connection reset by peer", "")
    ok = errors == ""
    duration = float((starts + e2el).max())
    result = {
        "duration": duration,
        "completed": int(ok.sum()),
        "failed": int((~ok).sum()),
        "total_input_tokens": 128 * n,
        "total_output_tokens": OUTPUT_LEN * int(ok.sum()),
        "request_throughput": n / duration,
        "request_goodput": None,
        "output_throughput": OUTPUT_LEN * n / duration,
        "total_token_throughput": (128 + OUTPUT_LEN) * n / duration,
        "max_output_tokens_per_s": 0.0,
        "max_concurrent_requests": 64,
        "input_lens": [128] * n,
        "output_lens": [OUTPUT_LEN] * n,
        "ttfts": ttft.round(6).tolist(),
        "latencies": e2el.round(6).tolist(),
        "itls": itls.round(6).tolist(),
        "errors": errors.tolist(),
        "start_times": starts.round(6).tolist(),
    }
    for metric, values in (
        ("ttft", ttft),
        ("tpot", itls.mean(axis=1)),
        ("itl", itls.ravel()),
        ("e2el", e2el),
    ):
        ms = values * 1000
        result |= {f"mean_{metric}_ms": float(ms.mean()), f"median_{metric}_ms": float(np.median(ms))}
        result |= {f"std_{metric}_ms": float(ms.std())}
        for p in (50, 90, 95, 99):
            result[f"p{p}_{metric}_ms"] = float(np.percentile(ms, p))
    return result


def raw_dir(rows: int) -> Path:
    """raw/accelerator_type=cpu/date=/<campaign>/<spec>/ holding the envelope and the result files."""
    lake = CACHE / str(rows) / "lake"
    spec_dir = lake / "raw" / "accelerator_type=cpu" / f"date={DATE}" / CAMPAIGN / SPEC_ID
    if (spec_dir / "envelope.json").exists():
        return spec_dir
    sys.path.insert(0, str(REPO / "benchmarks"))
    from accelbench.core.spec import LoadPlan
    from zero_pipeline import spec as make_spec

    shutil.rmtree(CACHE / str(rows), ignore_errors=True)
    spec_dir.mkdir(parents=True)
    rng = np.random.default_rng(rows)
    files = max(1, rows // PER_FILE)
    bench = make_spec(
        LoadPlan(input_len=128, output_len=OUTPUT_LEN, concurrency=tuple(range(1, files + 1))), CAMPAIGN
    )
    levels = []
    for i in range(files):
        name = f"c{i + 1}-r0.json"
        (spec_dir / name).write_text(json.dumps(_result(rng, min(rows, PER_FILE))))
        levels.append(
            {
                "run_id": f"{CAMPAIGN}/{SPEC_ID}/c{i + 1}-r0",
                "level_kind": "concurrency",
                "level_value": i + 1,
                "repeat": 0,
                "seed": 0,
                "status": "ok",
                "result_file": name,
                "error": None,
                "started_at": f"{DATE}T00:00:00+00:00",
                "wall_s": 10.0,
                "server_counters": {
                    "prompt_tokens": 1.0,
                    "generation_tokens": 1.0,
                    "preemptions": 0.0,
                    "request_success": 1.0,
                },
                "server_gauge_peaks": {
                    "requests_running": 1.0,
                    "requests_waiting": 0.0,
                    "kv_cache_usage": 0.1,
                },
                "memory_peaks": {"server_rss_bytes": 1.0, "server_rss_anon_bytes": 1.0},
                "tokens_agree": True,
                "requested_rate": None,
                "achieved_rate": 50.0,
                "client_limited": False,
                "peak_concurrency": 64,
            }
        )
    envelope = {
        "spec": bench.model_dump(mode="json"),
        "spec_id": SPEC_ID,
        "attempt": None,
        "server": {"version": {"version": "0.32.0"}},
        "loadgen_version": "0.32.0",
        "levels": levels,
        "failure": None,
    }
    (spec_dir / "envelope.json").write_text(json.dumps(envelope))
    return spec_dir


# ---- the three implementations (run in a child process) -------------------------------------------


def suite(spec_dir: Path, out: Path) -> None:
    from accelbench.lake.ingest import ingest_raw
    from accelbench.lake.raw import RawLocation
    from accelbench.lake.store import Lake
    from accelbench.report.build import ReportFilter, build_report

    lake = Lake(
        str(spec_dir.parents[4])
    )  # the cache's lake: raw/ is there; runs/ and requests/ are removed after
    ingest_raw(lake, RawLocation("cpu", DATE, CAMPAIGN, SPEC_ID), "benchmark")
    build_report(lake.read("runs").to_pylist(), [], [], ReportFilter())


def pandas_impl(spec_dir: Path, out: Path) -> None:
    import pandas as pd

    envelope = json.loads((spec_dir / "envelope.json").read_text())
    requests, runs = [], []
    for level in envelope["levels"]:
        result = json.loads((spec_dir / level["result_file"]).read_text())
        df = pd.DataFrame(
            {
                "run_id": level["run_id"],
                "input_tokens": result["input_lens"],
                "output_tokens": result["output_lens"],
                "ttft_s": result["ttfts"],
                "e2el_s": result["latencies"],
                "error": result["errors"],
                "start_offset_s": result["start_times"],
            }
        )
        df["request_index"] = range(len(df))
        df["success"] = df["error"] == ""
        df["start_offset_s"] -= df["start_offset_s"].min()
        df["tpot_s"] = (df["e2el_s"] - df["ttft_s"]) / (df["output_tokens"] - 1)
        gaps = pd.DataFrame({"itl": result["itls"]}).explode("itl").astype({"itl": float})
        by_request = gaps.groupby(level=0)["itl"]
        stats = by_request.agg(itl_mean_s="mean", itl_max_s="max")
        stats["itl_p50_s"] = by_request.quantile(0.5)
        stats["itl_p99_s"] = by_request.quantile(0.99)
        requests.append(df.join(stats))
        runs.append(
            {"run_id": level["run_id"]} | {k: v for k, v in result.items() if not isinstance(v, list)}
        )
    pd.concat(requests).to_parquet(out / "requests.parquet", compression="zstd")
    pd.DataFrame(runs).to_parquet(out / "runs.parquet", compression="zstd")


def duckdb_impl(spec_dir: Path, out: Path) -> None:
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 1")
    files = str(spec_dir / "c*.json")
    source = f"read_json('{files}', filename = true, format = 'auto', maximum_object_size = 1000000000)"
    con.execute(
        f"""COPY (
            WITH levels AS (
                SELECT filename, ttfts, latencies, itls, input_lens, output_lens, errors, start_times,
                       list_min(start_times) AS t0
                FROM {source}
            ), requests AS (
                SELECT filename AS run_id, t0,
                       unnest(generate_series(0, len(ttfts) - 1)) AS request_index,
                       unnest(input_lens) AS input_tokens, unnest(output_lens) AS output_tokens,
                       unnest(ttfts) AS ttft_s, unnest(latencies) AS e2el_s, unnest(errors) AS error,
                       unnest(start_times) AS started, unnest(itls) AS gaps
                FROM levels
            )
            SELECT run_id, request_index, input_tokens, output_tokens, ttft_s, e2el_s,
                   error = '' AS success, nullif(error, '') AS error, started - t0 AS start_offset_s,
                   CASE WHEN output_tokens > 1 AND error = '' THEN (e2el_s - ttft_s) / (output_tokens - 1) END
                       AS tpot_s,
                   list_avg(gaps) AS itl_mean_s, list_max(gaps) AS itl_max_s,
                   list_sort(gaps)[round(0.5 * (len(gaps) - 1))::INT + 1] AS itl_p50_s,
                   list_sort(gaps)[round(0.99 * (len(gaps) - 1))::INT + 1] AS itl_p99_s
            FROM requests
        ) TO '{out / "requests.parquet"}' (FORMAT parquet, COMPRESSION zstd)"""
    )
    con.execute(
        f"""COPY (
            SELECT filename AS run_id, duration, completed, failed, total_input_tokens, total_output_tokens,
                   request_throughput, output_throughput, p99_ttft_ms, p99_tpot_ms, p99_e2el_ms
            FROM {source}
        ) TO '{out / "runs.parquet"}' (FORMAT parquet)"""
    )


IMPLEMENTATIONS = {"suite": suite, "pandas": pandas_impl, "duckdb": duckdb_impl}
PRELOAD = {
    "suite": ["accelbench.lake.ingest", "accelbench.lake.store", "accelbench.report.build"],
    "pandas": ["pandas", "pyarrow.parquet"],
    "duckdb": ["duckdb"],
}


def child(name: str, spec_dir: Path, out: Path) -> None:
    import resource

    import pyarrow as pa

    os.sched_setaffinity(0, {CPU})
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    for module in PRELOAD[name]:  # import time is not ingest time
        __import__(module)
    started = time.perf_counter()
    IMPLEMENTATIONS[name](spec_dir, out)
    wall = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"wall_s": wall, "peak_mib": peak_kib / 1024}))


def measure(name: str, spec_dir: Path, rows: int) -> dict:
    out = CACHE / str(rows) / f"out-{name}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = os.environ | {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", name, str(spec_dir), str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode:
        raise SystemExit(f"{name} at {rows} rows failed:\n{proc.stderr[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    for table in ("runs", "requests"):  # what the suite wrote into the cache's lake
        shutil.rmtree(spec_dir.parents[4] / table, ignore_errors=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
        return
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--rows", default="10000,100000,1000000,10000000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="suite,pandas,duckdb")
    args = parser.parse_args()
    names = args.only.split(",")
    print(
        f"{'rows':>10} {'impl':>7} {'rows/s':>12} {'peak MiB':>9} {'vs duckdb':>9} {'rows/s vs smallest':>18}"
    )
    first: dict[str, float] = {}
    misses = []
    for rows in (int(r) for r in args.rows.split(",")):
        spec_dir = raw_dir(rows)
        results = {name: [measure(name, spec_dir, rows) for _ in range(args.runs)] for name in names}
        rate = {n: rows / statistics.median(r["wall_s"] for r in results[n]) for n in names}
        for name in names:
            peak = statistics.median(r["peak_mib"] for r in results[name])
            vs = rate["duckdb"] / rate[name] if "duckdb" in rate else float("nan")
            first.setdefault(name, rate[name])
            scale = rate[name] / first[name]
            print(f"{rows:>10} {name:>7} {rate[name]:>12,.0f} {peak:>9.0f} {vs:>8.2f}x {scale:>17.2f}x")
            if name == "suite" and vs > TARGET_RATIO:
                misses.append(f"{rows} rows: {vs:.2f}x DuckDB's time")
    print("target: within 2x of DuckDB: " + ("met" if not misses else "MISSED at " + "; ".join(misses)))


if __name__ == "__main__":
    main()
