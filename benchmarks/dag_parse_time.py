"""DAG parse time: every DAG file alone and the whole DagBag, median of several runs (target < 1 s/file).

Run: .venv/bin/python benchmarks/dag_parse_time.py [--runs 7]
Each measurement parses in a fresh interpreter (as the dag processor's first parse of a file does);
the Airflow import itself is timed separately and subtracted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DAGS = REPO / "dags"
TARGET_S = 1.0

PROBE = r"""
import sys, time
t0 = time.perf_counter()
from airflow.dag_processing.dagbag import DagBag
t1 = time.perf_counter()
bag = DagBag(dag_folder=sys.argv[1])
t2 = time.perf_counter()
assert not bag.import_errors, bag.import_errors
print(f"PARSE-TIMES {t1 - t0:.6f} {t2 - t1:.6f} {len(bag.dag_ids)}")
"""


def parse_once(target: Path, env: dict[str, str]) -> tuple[float, float, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(target)], capture_output=True, text=True, env=env, check=True
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("PARSE-TIMES "))
    _, imp, parse, dags = line.split()
    return float(imp), float(parse), int(dags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="accelbench-bench-")
    env = os.environ | {
        "AIRFLOW_HOME": home,
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "ACCELBENCH_HOME": home,
    }
    targets = [*sorted(DAGS.glob("*.py")), DAGS]
    print(
        f"DAG parse time, median of {args.runs} runs, each in a fresh interpreter "
        f"(target < {TARGET_S} s/file)"
    )
    print(f"{'target':<40}{'dags':>5}{'parse s':>10}{'min s':>9}{'max s':>9}{'airflow import s':>18}")
    worst = 0.0
    for target in targets:
        runs = [parse_once(target, env) for _ in range(args.runs)]
        parse = [r[1] for r in runs]
        name = "whole DagBag (dags/)" if target == DAGS else target.name
        print(
            f"{name:<40}{runs[0][2]:>5}{statistics.median(parse):>10.3f}{min(parse):>9.3f}"
            f"{max(parse):>9.3f}{statistics.median(r[0] for r in runs):>18.3f}"
        )
        if target != DAGS:
            worst = max(worst, statistics.median(parse))
    verdict = "meets" if worst < TARGET_S else "MISSES"
    print(f"slowest file: {worst:.3f} s median -> {verdict} the {TARGET_S} s target")


if __name__ == "__main__":
    main()
