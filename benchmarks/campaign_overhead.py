"""Campaign overhead: where the wall time of a local campaign goes, and how many servers it started.

Run: .venv/bin/python benchmarks/campaign_overhead.py --preset demo|default [--runs N] [--before REV]

Each run is a real `airflow dags test accelbench_campaign` in local mode (SQLite, offline prices, a fresh
lake), timed from outside. The split comes from the evidence the campaign itself leaves: the server
start-up each executor recorded (raw execution.json), the wall time of every level and the load phase
inside it (`vllm bench serve`'s own duration) from the runs table, and the server-start journal (one line
per `vllm serve` process launched).

  command          the `airflow dags test` command, end to end
  wall             the DAG run, start to end (Airflow's run_duration): what a scheduler's run of the
                   campaign takes; the command adds the CLI's own start (import, DagBag, serialization)
  server start-up  launch until /health answered, every server
  load phases      sending and receiving requests (bench duration), every level x repeat
  everything else  wall - server start-up - load phases, itself split into:
    warm-up requests   served, not measured: each workload's before its first level, each level's before
                       its first repeat and its recheck (their bench durations)
    the rest           outside start-up and every request served, split again into:
      client, levels     per level: the client's set-up, scrapes and result writing around its load
                         (level wall - duration - the level's warm-up)
      client, warm-up    per workload: around its warm-up requests (and the prefix cache's reset)
      orchestration      Airflow's tasks, planning, ingest, summary

Presets (issue 49, point 4):
  demo     scripts/demo.sh's campaign: the real model (SmolLM2-135M-Instruct, scripts/demo-model.sh), two
           workloads (fixed 64/32 and the shipped trace at 1x), concurrency 1/2/4 x 2 repeats, 10 prompts
  default  the campaign form's defaults for the load (concurrency 1/4/16 x 2 repeats, 200 prompts of
           512/128 tokens, the fixed workload) on the tiny model, one instance type
--before REV also measures the product at git revision REV (a worktree beside the runs, this checkout's
virtual environments), its runs interleaved with this checkout's, so both see the same machine.
Target (issue 49): everything outside start-up and load under 5% of the DAG run at the default size; both
readings are printed: warm-up requests counted as load (the server serves them) and as overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
TARGET_OTHER = 0.05
TRACE = "plugins/accelbench/traces/data/generated-day.jsonl"
PRESETS: dict[str, tuple[str, dict]] = {
    "demo": (
        "real",
        {
            "instance_types": ["m8g.xlarge"],
            "concurrency": [1, 2, 4],
            "repeats": 2,
            "prompts_per_level": 10,
            "input_len": 64,
            "output_len": 32,
            "workloads": ["fixed", "trace"],
            "time_scales": [1],
        },
    ),
    "default": ("tiny", {"instance_types": ["m8g.xlarge"]}),  # the rest: the request's own defaults
}


def environment(home: Path, repo: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELBENCH_", "AIRFLOW"))}
    return env | {
        "ACCELBENCH_HOME": str(home),
        "ACCELBENCH_OFFLINE": "1",
        "ACCELBENCH_EXECUTION_MODE": "local",
        "ACCELBENCH_DEADLINE_FACTOR": "0",  # as the demo: `dags test` and a deadline (apache/airflow#73428)
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(repo / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "PYTHONPATH": str(repo / "plugins"),  # that checkout's library before the editable install's
    }


def dags_test(dag_id: str, env: dict[str, str], log: Path, conf: dict | None = None) -> tuple[float, float]:
    """`airflow dags test`; the command's wall time and the DAG run's own (Airflow's run_duration). It exits
    0 even when a task failed: check the final state."""
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
    text = log.read_text()
    finished = re.search(rf"DagRun Finished: dag_id={dag_id},.*run_duration=([0-9.]+), state=(\w+)", text)
    if finished is None or finished.group(2) != "success":
        sys.exit(f"{dag_id} did not succeed: see {log}")
    return wall, float(finished.group(1))


def measure(home: Path, repo: Path, model: Path, conf: dict) -> dict[str, float]:
    shutil.rmtree(home, ignore_errors=True)  # a reused --workdir: count nothing of an earlier run
    home.mkdir(parents=True)
    env = environment(home, repo)
    subprocess.run([str(VENV / "airflow"), "db", "migrate"], env=env, capture_output=True, check=True)
    dags_test("accelbench_instance_catalog", env, home / "catalog.log")
    command, wall = dags_test("accelbench_campaign", env, home / "campaign.log", conf | {"model": str(model)})
    return analyse(home, command, wall)


def analyse(home: Path, command: float, wall: float) -> dict[str, float]:
    """The split of one run's wall time from the evidence its campaign left under `home`."""
    import pyarrow.dataset as ds

    lake = home / "lake"
    # Read as files, not through this checkout's Lake: a --before revision's lake may be another schema.
    runs = ds.dataset(lake / "runs", format="parquet", partitioning="hive")
    runs_rows = runs.to_table(columns=["spec_id", "duration_s", "wall_s"]).to_pylist()
    raw = [p for p in (lake / "raw").rglob("*") if p.is_file()]
    executions = [json.loads(p.read_text()) for p in raw if p.name == "execution.json"]
    envelopes = [json.loads(p.read_text()) for p in raw if p.name == "envelope.json"]
    journal = [x for p in (home / "work").glob("*/server-starts.jsonl") for x in p.read_text().splitlines()]
    # A server's start-up is on its first workload's execution.json only (issue 49: one server, its
    # workloads in turn); before, on every spec's.
    startups = [e["server_startup_s"] for e in executions if e.get("server_startup_s") is not None]
    startup = sum(startups)
    load = sum(r["duration_s"] or 0.0 for r in runs_rows)
    # Warm-up requests, served but not measured: each server's (warmup.json) and each level's before its
    # first repeat and its recheck (<level>-warmup.json, <level>-recheck-warmup.json), by the client's clock.
    warmups = {
        p: json.loads(p.read_text()).get("duration") or 0.0 for p in raw if p.name.endswith("warmup.json")
    }
    server_warmups = sum(d for p, d in warmups.items() if p.name == "warmup.json")
    level_warmups = sum(warmups.values()) - server_warmups
    # Around the levels: a level's wall holds its warm-up (first repeat, recheck), its load, the client's.
    around_levels = sum(r["wall_s"] - (r["duration_s"] or 0.0) for r in runs_rows) - level_warmups
    around_warmup = (
        sum(
            (
                datetime.fromisoformat(e["levels"][0]["started_at"]) - datetime.fromisoformat(e["started_at"])
            ).total_seconds()
            for e in envelopes
            if e["levels"]
        )
        - server_warmups
    )
    # The plan task's estimate, one line per server it expects to start (campaign.estimate).
    estimated = re.findall(
        r"^\S+ on \S+: (\d+) s start-up .* = (\d+) s x ", (home / "campaign.log").read_text(), re.M
    )
    return {
        "estimated_servers": sum(float(a) > 0 for a, _ in estimated),  # a server's later workloads: 0 s
        "estimated_startup_s": sum(float(a) for a, _ in estimated),
        "estimated_s": sum(float(b) for _, b in estimated),
        "command_s": command,
        "wall_s": wall,
        "server_startup_s": startup,
        "load_s": load,
        "warmup_requests_s": server_warmups + level_warmups,
        "else_s": wall - startup - load,
        "overhead_s": wall - startup - load - server_warmups - level_warmups,
        "around_levels_s": around_levels,
        "around_warmup_s": around_warmup,
        "other_s": wall - startup - load - server_warmups - level_warmups - around_levels - around_warmup,
        "levels": len(runs_rows),
        "specs": len({r["spec_id"] for r in runs_rows}),
        "server_launches": len(journal),  # a port taken before vLLM bound it costs a second launch
        "servers": len(startups),  # servers that became healthy and were driven
    }


def ready_model(kind: str, home: Path) -> Path:
    """The demo's own model script (this checkout's): the folder a campaign names."""
    out = subprocess.run(
        [str(REPO / "scripts" / "demo-model.sh"), kind],
        env=os.environ | {"ACCELBENCH_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.splitlines()[0])


def worktree(rev: str, where: Path) -> Path:
    """REV checked out beside the runs, with this checkout's virtual environments (the servers' Python)."""
    if not where.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), rev], check=True)
    for venv in (".venv", ".venv-vllm"):
        if not (where / venv).exists():
            (where / venv).symlink_to(REPO / venv, target_is_directory=True)
    return where


def report(label: str, results: list[dict[str, float]], about: str) -> None:
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(f"\n{label}, median of {len(results)} run(s): {about}")
    print(f"{'part':<18}{'seconds':>9}{'share':>8}")
    for key, name in (
        ("server_startup_s", "server start-up"),
        ("load_s", "load phases"),
        ("else_s", "everything else"),
        ("warmup_requests_s", "  warm-up requests"),
        ("overhead_s", "  the rest:"),
        ("around_levels_s", "    client, levels"),
        ("around_warmup_s", "    client, warm-up"),
        ("other_s", "    orchestration"),
        ("wall_s", "wall (DAG run)"),
    ):
        print(f"{name:<18}{med[key]:>9.1f}{med[key] / med['wall_s']:>8.1%}")
    print(f"{'command':<18}{med['command_s']:>9.1f}  (the DAG run + `airflow dags test`'s own start)")
    print(
        f"levels measured: {med['levels']:.0f}; workloads (specs): {med['specs']:.0f}; servers started: "
        f"{med['servers']:.0f} ({med['server_launches']:.0f} launches)"
    )
    print(
        f"the plan's estimate: {med['estimated_servers']:.0f} server start(s), "
        f"{med['estimated_startup_s']:.0f} s of start-up, {med['estimated_s']:.0f} s in all (its stated "
        "allowances where the lake has no earlier start-up or throughput on this host)"
    )
    for key, what in (
        ("else_s", "everything outside start-up and measured load"),
        ("overhead_s", "everything outside start-up and the requests served (measured and warm-up)"),
    ):
        share = med[key] / med["wall_s"]
        verdict = "meets" if share < TARGET_OTHER else "misses"
        print(f"{what}: {share:.1%} of the DAG run -> {verdict} the {TARGET_OTHER:.0%} target")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="default")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--before", metavar="REV", help="also measure the product at this git revision")
    parser.add_argument("--workdir", type=Path, help="keep homes, logs and lakes here (default: a temp dir)")
    args = parser.parse_args()
    if not VLLM_PYTHON.is_file():
        sys.exit("needs the vLLM CPU environment: scripts/vllm-env.sh")
    kind, load = PRESETS[args.preset]
    conf = load | {"extra_engine_args": ["--enforce-eager"], "execution_mode": "local"}
    if "trace" in conf.get("workloads", []):
        conf["trace"] = str(REPO / TRACE)
    with tempfile.TemporaryDirectory(prefix="accelbench-overhead-") as scratch:
        tmp = args.workdir or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        model = ready_model(kind, tmp / "models-home")
        checkouts = {"this checkout": REPO}
        if args.before:
            rev = subprocess.run(
                ["git", "-C", str(REPO), "rev-parse", "--short", args.before],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            checkouts = {f"before: {rev}": worktree(rev, tmp / f"before-{rev}"), **checkouts}
        results: dict[str, list[dict[str, float]]] = {label: [] for label in checkouts}
        try:
            for i in range(args.runs):
                for j, (label, repo) in enumerate(checkouts.items()):
                    r = measure(tmp / f"run{i}-{j}", repo, model, conf)
                    results[label].append(r)
                    print(
                        f"run {i + 1}/{args.runs} ({label}): DAG run {r['wall_s']:.1f} s, everything else "
                        f"{r['else_s']:.1f} s, servers {r['servers']}",
                        flush=True,
                    )
        finally:
            if args.before and not args.workdir:
                subprocess.run(
                    [
                        "git",
                        "-C",
                        str(REPO),
                        "worktree",
                        "remove",
                        "--force",
                        str(checkouts[next(iter(checkouts))]),
                    ],
                    check=False,
                )
    shown = {k: v for k, v in conf.items() if k not in ("extra_engine_args", "execution_mode", "trace")}
    about = f"{kind} model, {json.dumps(shown)} (the rest: the campaign's defaults), --enforce-eager"
    for label, rs in results.items():
        report(f"{args.preset} campaign, {label}", rs, about)


if __name__ == "__main__":
    main()
