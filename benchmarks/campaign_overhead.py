"""Campaign overhead: where the wall time of a local campaign goes, and how many servers it started.

Run: .venv/bin/python benchmarks/campaign_overhead.py [--runs 3] [--instance-types m8g.xlarge,r8g.xlarge]

Each run is a real `airflow dags test accelbench_campaign` in local mode (SQLite, offline prices,
a fresh lake, the tiny model built once), timed from outside. The split comes from the evidence the
campaign itself leaves: the server start-up each executor recorded (raw execution.json), the wall
time of every level and the load phase inside it (`vllm bench serve`'s own duration) from the runs
table, and the server-start journal (one line per `vllm serve` process launched).

  wall             the `airflow dags test` command, end to end
  server start-up  launch until /health answered, every server
  load phases      sending and receiving requests (bench duration), every level x repeat
  everything else  wall - server start-up - load phases, itself split into:
    bench start      per level: the client's set-up and result writing around the load (level wall -
                     duration; before the warm client, a fresh `vllm bench serve` process each)
    warm-up          per server: the warm-up requests before the first level
    orchestration    the rest: Airflow, planning, metrics scrapes, ingest, summary
Target (issue 8): everything else under 10% of wall.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / ".venv" / "bin"
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
TARGET_OTHER = 0.10


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELBENCH_", "AIRFLOW"))}
    return env | {
        "ACCELBENCH_HOME": str(home),
        "ACCELBENCH_OFFLINE": "1",
        "ACCELBENCH_EXECUTION_MODE": "local",
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }


def dags_test(dag_id: str, env: dict[str, str], log: Path, conf: dict | None = None) -> float:
    """`airflow dags test`; its wall time. It exits 0 even when a task failed: check the final state."""
    started = time.perf_counter()
    with log.open("w") as out:
        subprocess.run(
            [str(VENV / "airflow"), "dags", "test", dag_id, "-c", json.dumps(conf or {})],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    wall = time.perf_counter() - started
    if f"DagRun Finished: dag_id={dag_id}" not in log.read_text() or "state=success" not in log.read_text():
        sys.exit(f"{dag_id} did not succeed: see {log}")
    return wall


def measure(home: Path, model: Path, conf: dict) -> dict[str, float]:
    from accelbench.lake.store import Lake

    shutil.rmtree(home, ignore_errors=True)  # a reused --workdir: count nothing of an earlier run
    home.mkdir(parents=True)
    env = environment(home)
    subprocess.run([str(VENV / "airflow"), "db", "migrate"], env=env, capture_output=True, check=True)
    dags_test("accelbench_instance_catalog", env, home / "catalog.log")
    wall = dags_test("accelbench_campaign", env, home / "campaign.log", conf | {"model": str(model)})
    lake = Lake(str(home / "lake"))
    runs = lake.read("runs").to_pylist()
    raw = lake.fs.find(lake.path("raw"))
    executions = [json.loads(lake.fs.cat_file(p)) for p in raw if p.endswith("execution.json")]
    envelopes = [json.loads(lake.fs.cat_file(p)) for p in raw if p.endswith("envelope.json")]
    journal = [
        json.loads(x)
        for p in (home / "work").glob("*/server-starts.jsonl")
        for x in p.read_text().splitlines()
    ]
    startup = sum(e["server_startup_s"] for e in executions)
    load = sum(r["duration_s"] or 0.0 for r in runs)
    bench_start = sum(r["wall_s"] - (r["duration_s"] or 0.0) for r in runs)
    warmup = sum(
        (
            datetime.fromisoformat(e["levels"][0]["started_at"]) - datetime.fromisoformat(e["started_at"])
        ).total_seconds()
        for e in envelopes
        if e["levels"]
    )
    return {
        "wall_s": wall,
        "server_startup_s": startup,
        "load_s": load,
        "bench_start_s": bench_start,
        "warmup_s": warmup,
        "else_s": wall - startup - load,
        "other_s": wall - startup - load - bench_start - warmup,
        "levels": len(runs),
        "specs": len({r["spec_id"] for r in runs}),
        "server_launches": len(journal),  # a port taken before vLLM bound it costs a second launch
        "servers": len(executions),  # servers that became healthy and were driven
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--instance-types", default="m8g.xlarge,r8g.xlarge")
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--input-len", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=32)
    parser.add_argument("--workdir", type=Path, help="keep homes, logs and lakes here (default: a temp dir)")
    args = parser.parse_args()
    if not VLLM_PYTHON.is_file():
        sys.exit("needs the vLLM CPU environment: scripts/vllm-env.sh")
    conf = {
        "instance_types": args.instance_types.split(","),
        "concurrency": [int(c) for c in args.concurrency.split(",")],
        "repeats": args.repeats,
        "prompts_per_level": args.prompts,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "extra_engine_args": ["--enforce-eager"],
        "execution_mode": "local",
    }
    with tempfile.TemporaryDirectory(prefix="accelbench-overhead-") as scratch:
        tmp = args.workdir or Path(scratch)
        model = tmp / "tiny-model"
        env = os.environ | {"PYTHONPATH": str(REPO / "plugins")}
        subprocess.run(
            [str(VLLM_PYTHON), "-m", "accelbench.local.tiny_model", str(model)],
            env=env,
            capture_output=True,
            check=True,
        )
        results = []
        for i in range(args.runs):
            results.append(measure(tmp / f"run{i}", model, conf))
            r = results[-1]
            print(
                f"run {i + 1}/{args.runs}: wall {r['wall_s']:.1f} s, everything else {r['else_s']:.1f} s",
                flush=True,
            )
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(
        f"\nlocal campaign, median of {args.runs} run(s): {conf['instance_types']}, concurrency "
        f"{conf['concurrency']} x {args.repeats} repeats, {args.prompts} prompts, "
        f"{args.input_len}/{args.output_len} tokens"
    )
    print(f"{'part':<18}{'seconds':>9}{'share':>8}")
    for key, label in (
        ("server_startup_s", "server start-up"),
        ("load_s", "load phases"),
        ("else_s", "everything else"),
        ("bench_start_s", "  bench start"),
        ("warmup_s", "  warm-up"),
        ("other_s", "  orchestration"),
        ("wall_s", "wall"),
    ):
        print(f"{label:<18}{med[key]:>9.1f}{med[key] / med['wall_s']:>8.1%}")
    print(
        f"levels measured: {med['levels']:.0f}; servers started: {med['servers']:.0f} "
        f"({med['server_launches']:.0f} launches); distinct specs: {med['specs']:.0f}"
        f" -> {'one server per spec' if med['servers'] == med['specs'] else 'MISMATCH'}"
    )
    share = med["else_s"] / med["wall_s"]
    print(
        f"everything else / wall: {share:.1%} -> "
        f"{'meets' if share < TARGET_OTHER else 'MISSES'} the {TARGET_OTHER:.0%} target"
    )


if __name__ == "__main__":
    main()
