"""CPU of the same Python work under different interpreters: why scripts/uv.sh (env_python) makes the
environments from the distribution's Python (Debian's: profile-guided and link-time optimised) rather than
python3 on PATH (on this kind of machine pyenv's default build: neither, and a shared libpython).

Run: .venv/bin/python benchmarks/interpreters.py [PYTHON ...] [--import MODULE] [--repeats 5]

Each PYTHON (default: /usr/bin/python3 and python3 on PATH) runs a fixed pure-Python workload (JSON round
trips, recursion, object creation, compiling a module's source) in a fresh process, `--repeats` times,
alternating; with `--import MODULE` each instead imports MODULE (give each environment's own python, say
two `.venv-vllm/bin/python` built from different interpreters, and `--import vllm.benchmarks.serve`, what a
bench runner imports). Prints each one's median CPU seconds (user + system, the child's rusage) and its
ratio to the first. Quiet machine assumed: run nothing beside it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys

WORKLOAD = """
import ast, inspect, json
d = {"a": [{"x": i, "y": str(i) * 3, "z": [1.5, 2.5, None, True]} for i in range(2000)]}
for _ in range(30):
    json.loads(json.dumps(d))
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(25)
class P:
    __slots__ = ("x", "y")
    def __init__(s, x, y):
        s.x, s.y = x, y
s = 0
for i in range(300000):
    p = P(i, i + 1)
    s += p.x * p.y
src = inspect.getsource(ast)
for _ in range(5):
    compile(src, "x", "exec")
"""


WHERE = "import sys; print(sys.executable)"


def cpu_seconds(cmd: list[str]) -> float:
    """User + system CPU seconds of one child process running `cmd` (its descendants included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pythons", nargs="*")
    parser.add_argument("--import", dest="module", help="time importing this module instead of the workload")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    pythons = args.pythons or [p for p in ("/usr/bin/python3", shutil.which("python3")) if p]
    # The interpreter itself, not a launcher in front of it (pyenv's python3 is a shell script that execs it).
    pythons = [
        subprocess.run(
            [p, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, check=True
        ).stdout.strip()
        for p in pythons
    ]
    if args.module:  # once each first: the import's bytecode is written, not timed
        for python in pythons:
            subprocess.run([python, "-c", f"import {args.module}"], check=True, capture_output=True)
    cmd = ["-c", f"import {args.module}"] if args.module else ["-S", "-c", WORKLOAD]
    seen: dict[str, list[float]] = {p: [] for p in pythons}
    for _ in range(args.repeats):
        for python in pythons:
            seen[python].append(cpu_seconds([python, *cmd]))
    what = f"import {args.module}" if args.module else "the pure-Python workload"
    print(f"{what}: median CPU seconds of {args.repeats} fresh processes each")
    first = statistics.median(seen[pythons[0]])
    for python in pythons:
        version = subprocess.run(
            [python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
        ).stdout.strip()
        median = statistics.median(seen[python])
        runs = [round(x, 2) for x in seen[python]]
        print(f"  {python} (Python {version}): {median:.2f} s ({median / first:.2f}x), runs {runs}")


if __name__ == "__main__":
    sys.exit(main())
