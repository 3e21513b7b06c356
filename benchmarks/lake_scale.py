"""What a year of scheduled campaigns costs the report task (issue 50): simulated lakes of 10^3..10^5 runs
(10^7..10^9 requests represented), the report task run on each, local and on a moto S3 server.

Run: .venv/bin/python benchmarks/lake_scale.py [--runs 1000,10000,100000] [--stores local,s3] [--repeat 1]

The lake is what a schedule leaves: 20 configurations (instance types) measured once a day, 5 concurrency
levels x 3 repeats each, so one campaign a day of 20 servers, each server landing one Parquet file per table
(its 15 `runs` rows, its 45 `sketches` rows: TTFT, TPOT, E2EL), under the day's partition; N runs are N / 300
days. Every run represents `--per-run` requests (10,000): its `runs` row counts them and its `sketches` rows
are DDSketch bins of that many lognormal latencies (a pool of 64 sketches drawn once, assigned at random,
so the files compress like distinct runs); the `requests` table is not written (the report never reads it,
issue 50 point 3: it is drill-down's). The catalog is SQLite, seeded and priced from the shipped snapshots.

Each measurement is a fresh process: `accelbench.report.service.cross_tier_report` (the report DAG task's
body) over the whole lake, with its wall time, its peak RSS (ru_maxrss), and what it asked of the lake's
filesystem (fsspec, the layer both stores go through): files opened, bytes read, listings. On S3 the files
opened and listings are GET and LIST requests; `s3 cost` prices them on paper (see RESULTS.md for the
latency figure used). The fitted growth exponent of time, memory and files over runs is printed at the end.
Lakes are cached in benchmarks/.cache/lake_scale/<runs>/ (made once, seed 0).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))
CACHE = REPO / "benchmarks" / ".cache" / "lake_scale"
TYPES = [
    f"{family}.{size}"
    for family in ("m8g", "c8g", "r8g", "m7g", "c7g")
    for size in ("large", "xlarge", "2xlarge", "4xlarge")
]
LEVELS, REPEATS = (1, 2, 4, 8, 16), 3
RUNS_PER_DAY = len(TYPES) * len(LEVELS) * REPEATS  # 300
POOL = 64  # distinct sketches drawn (see the module docstring)
FIRST_DAY = datetime(2026, 1, 1, tzinfo=UTC)


def _sketch_pool(per_run: int) -> list[dict[str, dict[str, Any]]]:
    """POOL runs' sketches rows (metric -> row without ids) of `per_run` lognormal requests each."""
    from accelbench.lake.sketches import sketch_row

    rng = np.random.default_rng(0)
    pool = []
    for _ in range(POOL):
        scale = rng.uniform(0.5, 2.0)
        ttft = rng.lognormal(np.log(80 * scale), 0.5, per_run)
        tpot = rng.lognormal(np.log(20 * scale), 0.2, per_run)
        e2el = ttft + 31 * tpot
        stub = {"run_id": "", "campaign_id": "", "spec_id": ""}
        pool.append({m: sketch_row(v, m, stub) for m, v in (("ttft", ttft), ("tpot", tpot), ("e2el", e2el))})
    return pool


def _run_row(day: int, type_index: int, level: int, repeat: int, sketches: dict, per_run: int) -> dict:
    """One `runs` row: a configuration's level on day `day`, its figures from its sketch's percentiles."""
    instance = TYPES[type_index]
    when = FIRST_DAY + timedelta(days=day, minutes=type_index * 20 + level + repeat)
    campaign = f"accelbench_campaign.scheduled__{(FIRST_DAY + timedelta(days=day)).date()}"
    spec = f"{instance.replace('.', '-')}-{type_index:04d}"
    ttft, tpot, e2el = (sketches[m] for m in ("ttft", "tpot", "e2el"))
    duration = per_run * e2el["p50_ms"] / 1000 / level
    return {
        "run_id": f"{campaign}/{spec}/c{level}-r{repeat}",
        "campaign_id": campaign,
        "dag_run_id": campaign.split(".", 1)[1],
        "spec_id": spec,
        "matrix_key": spec,
        "status": "ok",
        "accelerator_type": "cpu",
        "instance_type": instance,
        "host_instance_type": instance,
        "measured_on_instance": True,
        "execution_mode": "kubernetes",
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "vllm_version": "0.32.0",
        "dtype": "bfloat16",
        "kv_cache_dtype": "auto",
        "max_model_len": 4096,
        "tensor_parallel_size": 1,
        "engine_args": "",
        "dataset": "random",
        "workload": "random 128→32",
        "endpoint": "completions",
        "input_len": 128,
        "output_len": 32,
        "range_ratio": 0.0,
        "level_kind": "concurrency",
        "level_value": float(level),
        "repeat": repeat,
        "started_at": when,
        "duration_s": duration,
        "completed": per_run,
        "failed": 0,
        "request_throughput": per_run / duration,
        "output_throughput": 32 * per_run / duration,
        "total_token_throughput": 160 * per_run / duration,
        **{
            f"{p}_{m}_ms": row[f"{p}_ms"]
            for m, row in (("ttft", ttft), ("tpot", tpot), ("e2el", e2el))
            for p in ("p50", "p90", "p99")
        },
        "mean_ttft_ms": ttft["total_ms"] / ttft["count"],
        "mean_tpot_ms": tpot["total_ms"] / tpot["count"],
        "mean_e2el_ms": e2el["total_ms"] / e2el["count"],
    }


def make_lake(runs: int, per_run: int) -> Path:
    """The cached lake of `runs` runs (made once): its root holds `lake/` and `catalog.db`."""
    import pyarrow as pa
    from accelbench.lake.schemas import RUNS, SKETCHES
    from accelbench.lake.store import Lake

    root = CACHE / f"{runs}-{per_run}"
    if (root / "made.json").is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    lake = Lake(str(root / "lake"))
    rng = np.random.default_rng(0)
    pool = _sketch_pool(per_run)
    began = time.perf_counter()
    days = math.ceil(runs / RUNS_PER_DAY)
    made = 0
    for day in range(days):
        date = str((FIRST_DAY + timedelta(days=day)).date())
        for t in range(len(TYPES)):
            rows, sketches = [], []
            for level in LEVELS:
                for repeat in range(REPEATS):
                    if made >= runs:
                        break
                    drawn = pool[int(rng.integers(POOL))]
                    row = _run_row(day, t, level, repeat, drawn, per_run)
                    rows.append(row)
                    ids = {k: row[k] for k in ("run_id", "campaign_id", "spec_id")}
                    sketches.extend(s | ids for s in drawn.values())
                    made += 1
            if not rows:
                break
            stem = f"{rows[0]['campaign_id']}-{rows[0]['spec_id']}"
            lake.write_table("runs", pa.Table.from_pylist(rows, schema=RUNS), "cpu", date, stem)
            lake.write_table("sketches", pa.Table.from_pylist(sketches, schema=SKETCHES), "cpu", date, stem)
    _catalog(root)
    files = sum(1 for _ in (root / "lake").rglob("*.parquet"))
    size = sum(p.stat().st_size for p in (root / "lake").rglob("*.parquet"))
    facts = {"runs": made, "days": days, "files": files, "bytes": size, "made_s": time.perf_counter() - began}
    (root / "made.json").write_text(json.dumps(facts))
    return root


def compacted_lake(root: Path) -> Path:
    """A copy of the lake at `root` with every partition compacted (`accelbench.lake.compaction`), made once;
    its time is stored beside it."""
    from accelbench.lake.compaction import compact
    from accelbench.lake.store import Lake

    done = root.with_name(root.name + "-compacted")
    if (done / "made.json").is_file():
        return done
    shutil.rmtree(done, ignore_errors=True)
    shutil.copytree(root, done)
    shutil.rmtree(done / "lake" / "reports", ignore_errors=True)
    began = time.perf_counter()
    results = compact(Lake(str(done / "lake")), ("runs", "sketches"))
    facts = json.loads((root / "made.json").read_text())
    facts["compacted_s"] = time.perf_counter() - began
    facts["partitions"] = sum(c.partitions for c in results.values())
    facts["files"] = sum(1 for _ in (done / "lake").rglob("*.parquet"))
    facts["bytes"] = sum(p.stat().st_size for p in (done / "lake").rglob("*.parquet"))
    (done / "made.json").write_text(json.dumps(facts))
    return done


def _catalog(root: Path) -> None:
    """The catalog of the lake: the shipped seed's types, priced from the shipped snapshots."""
    from accelbench.catalog.db import make_engine, migrate
    from accelbench.catalog.price_refresh import refresh_offline
    from accelbench.catalog.seed import upsert_instance_types
    from accelbench.tiers import load_seed

    engine = make_engine(f"sqlite:///{root / 'catalog.db'}")
    migrate(engine)
    specs = load_seed()
    upsert_instance_types(engine, specs)
    refresh_offline(engine, specs, ["us-east-1"], now=FIRST_DAY)
    engine.dispose()


class Counted:
    """What the report asked of the lake's fsspec filesystem: files opened, bytes read, listings."""

    def __init__(self, fs: Any) -> None:
        self.opened = self.bytes = self.listings = 0
        opener, lister, finder = fs.open, fs.ls, fs.find
        counter = self

        class Reader:
            def __init__(self, handle: Any) -> None:
                self._handle = handle

            def read(self, *a: Any) -> bytes:
                data = self._handle.read(*a)
                counter.bytes += len(data)
                return data

            def readinto(self, buffer: Any) -> int:
                n = self._handle.readinto(buffer)
                counter.bytes += n or 0
                return n

            def __getattr__(self, name: str) -> Any:
                return getattr(self._handle, name)

            def __enter__(self) -> Reader:
                return self

            def __exit__(self, *exc: Any) -> None:
                self._handle.close()

        def open_(path: str, mode: str = "rb", *a: Any, **k: Any) -> Any:
            handle = opener(path, mode, *a, **k)
            if "r" in mode:
                counter.opened += 1
                return Reader(handle)
            return handle

        def ls(*a: Any, **k: Any) -> Any:
            counter.listings += 1
            return lister(*a, **k)

        def find(*a: Any, **k: Any) -> Any:
            counter.listings += 1
            return finder(*a, **k)

        fs.open, fs.ls, fs.find = open_, ls, find


def child(root: Path, store: str) -> None:
    import pyarrow as pa
    from accelbench.catalog.db import make_engine
    from accelbench.lake.store import Lake
    from accelbench.report.service import cross_tier_report

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    uri = str(root / "lake") if store == "local" else os.environ["LAKE_SCALE_S3_URI"]
    lake = Lake(uri)
    counted = Counted(lake.fs)

    @contextmanager
    def catalog() -> Any:
        engine = make_engine(f"sqlite:///{root / 'catalog.db'}")
        try:
            yield engine
        finally:
            engine.dispose()

    began = time.perf_counter()
    written = cross_tier_report({"region": "us-east-1", "slos": {"ttft_p99_ms": 2000}}, catalog, lambda: lake)
    wall = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "wall_s": wall,
                "peak_bytes": peak,
                "opened": counted.opened,
                "bytes": counted.bytes,
                "listings": counted.listings,
                "points": written.rows.get("points", 0),
            }
        )
    )


@contextmanager
def s3_copy(root: Path) -> Any:
    """The lake copied into a moto S3 server on loopback, as LAKE_SCALE_S3_URI and its endpoint."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": endpoint,
        "LAKE_SCALE_S3_URI": "s3://lake-scale/lake",
    }
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )
    s3.create_bucket(Bucket="lake-scale")
    base = root / "lake"
    for path in base.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), "lake-scale", f"lake/{path.relative_to(base)}")
    try:
        yield env
    finally:
        server.stop()


def measure(root: Path, store: str, env: dict[str, str] | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", str(root), store]
    out = subprocess.run(
        cmd, check=True, capture_output=True, text=True, cwd=REPO, env=os.environ | (env or {})
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def exponent(xs: list[float], ys: list[float]) -> float:
    """The slope of log y over log x (least squares): y ~ x^slope."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", default="1000,10000,100000")
    parser.add_argument("--per-run", type=int, default=10_000)
    parser.add_argument("--stores", default="local,s3")
    parser.add_argument("--layouts", default="small,compacted", help="small files, or compacted")
    parser.add_argument("--child", nargs=2, metavar=("ROOT", "STORE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1])
        return
    print(
        f"{'runs':>7} {'requests':>9} {'layout':>9} {'files':>7} {'MiB':>6} {'store':>5} {'s':>7} "
        f"{'peak MiB':>9} {'opened':>7} {'read MiB':>9} {'lists':>6}"
    )
    found: dict[str, list[tuple[int, dict]]] = {}
    for runs in (int(r) for r in args.runs.split(",")):
        for layout in args.layouts.split(","):
            root = make_lake(runs, args.per_run)
            if layout == "compacted":
                root = compacted_lake(root)
            facts = json.loads((root / "made.json").read_text())
            for store in args.stores.split(","):
                if store == "local":
                    got = measure(root, store)
                else:
                    with s3_copy(root) as env:
                        got = measure(root, store, env)
                found.setdefault(f"{store} {layout}", []).append((runs, got))
                print(
                    f"{runs:>7} {runs * args.per_run:>9.0e} {layout:>9} {facts['files']:>7} "
                    f"{facts['bytes'] / 2**20:>6.0f} {store:>5} {got['wall_s']:>7.2f} "
                    f"{got['peak_bytes'] / 2**20:>9.0f} {got['opened']:>7} {got['bytes'] / 2**20:>9.1f} "
                    f"{got['listings']:>6}",
                    flush=True,
                )
    for store, rows in found.items():
        if len(rows) < 2:
            continue
        xs = [r for r, _ in rows]
        fits = {
            k: exponent(xs, [max(g[k], 1e-9) for _, g in rows])
            for k in ("wall_s", "peak_bytes", "opened", "bytes")
        }
        print(f"{store}: growth exponents over runs: " + ", ".join(f"{k} {v:.2f}" for k, v in fits.items()))


if __name__ == "__main__":
    main()
