"""Does the load search's capacity interval contain the capacity, and what does it cost? (issue 29)

Run: .venv/bin/python benchmarks/search_coverage.py [--searches 10] [--grid-prompts 1500] [--grid-passes 3]
         [--prompts 200 --max-requests 800] [--ttft-ms 20 --slope 0.25 --slo-ms 52] [--upper 8]

One zero-work server (benchmarks/zero_server.py, pinned to its own core) whose TTFT grows with the
requests streaming: each delay x (1 + slope x in flight), so the p99 TTFT rises step by step with the
concurrency, plus this shared machine's own noise (stalls of the client and the server); one warm
`vllm bench serve` client (pinned to the other core), two phases against that one server:

  grid    every concurrency 1..upper as fixed levels of --grid-prompts requests, --grid-passes times,
          interleaved with the searches (a pass, then an even share of the searches, then a pass...) so
          that the reference sees the same hours of this shared machine: per load the median over the
          passes of the p99 TTFT (numpy's percentile of the pass's requests; one pass's p99 rests on its 15
          slowest requests, and a stall of the machine reaches that many), and the reference capacity,
          the largest load whose median p99 and every smaller load's are within --slo-ms.
  search  --searches times the interval rule's search (SearchPlan.max_requests; seeds 0, 1, ...): its
          capacity, its 95% interval (search.statistics.fit_capacity) and its server-seconds.

Printed: each search's outcome, capacity [low, high] and server-seconds; how many intervals contain the
reference capacity (an open end counts as open: "-" below is 0, above unbounded); each search's
server-seconds against one grid pass's (the mean pass: `vllm bench serve`'s own duration of every level,
as SearchResult.server_s).
Acceptance (issue 29): at least 9 of 10 intervals contain the reference, each search at most half the
grid's server-seconds.

Simulated (issue 48, point 4): benchmarks/search_coverage_sim.py drives 1,000 searches of the same plan
(these defaults: UPPER, PROMPTS, MAX_REQUESTS, SLOPE) through the real `LoadSearch` and `fit_capacity`
on a simulated server whose p99 wanders from run to run, no server needed.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from accelbench.core.search_plan import SearchPlan, SearchResult
from accelbench.core.slos import Slos
from accelbench.core.spec import LoadPlan
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver
from zero_pipeline import CLIENT_CPU, VLLM_BIN, spec, zero_server

TARGET_COVERED, TARGET_RATIO = 9, 0.5  # of 10 searches; search server-s / grid server-s
# The plan and the server's slope, shared with the simulated mode (search_coverage_sim.py).
UPPER, PROMPTS, MAX_REQUESTS = 8, 200, 800  # concurrency 1..UPPER; requests per probe measurement; the cap
TTFT_MS, SLOPE = 20.0, 0.25  # each delay x (1 + SLOPE x in flight)
GRID_PROMPTS, GRID_PASSES = 1500, 3  # the reference grid: requests per level, passes (median over them)


def grid(
    url: str, pid: int, client: BenchClient, work: Path, args: argparse.Namespace, n: int
) -> tuple[dict[float, float], float]:
    """One grid pass: {load: p99 TTFT ms} and its server-seconds."""
    load = LoadPlan(
        input_len=16,
        output_len=2,
        prompts_per_level=args.grid_prompts,
        warmups=2,
        seed=99 + n,
        concurrency=tuple(range(1, args.upper + 1)),
    )
    driver = Driver(
        spec(load, f"grid-{n}"), url, work / f"grid-{n}", vllm=str(VLLM_BIN), server_pid=pid, client=client
    )
    envelope = driver.run()
    assert envelope.failure is None, envelope.failure
    p99: dict[float, float] = {}
    server_s = 0.0
    for rec in envelope.levels:
        repeat = driver.repeat_result(rec)
        p99[rec.level_value] = float(np.percentile(repeat.ttft_ms, 99))
        server_s += repeat.duration_s
    return p99, server_s


def search(
    url: str, pid: int, client: BenchClient, work: Path, args: argparse.Namespace, seed: int
) -> SearchResult:
    plan = SearchPlan(
        variable="concurrency",
        lower=1,
        upper=args.upper,
        min_requests=args.prompts,
        max_requests=args.max_requests,
        slos=Slos(ttft_p99_ms=args.slo_ms),
    )
    load = LoadPlan(
        input_len=16, output_len=2, prompts_per_level=args.prompts, warmups=2, seed=seed, search=plan
    )
    out = work / f"search-{seed}"
    driver = Driver(spec(load, f"search-{seed}"), url, out, vllm=str(VLLM_BIN), server_pid=pid, client=client)
    envelope = driver.run()
    assert envelope.failure is None and envelope.search is not None, envelope.failure
    return envelope.search


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--searches", type=int, default=10)
    parser.add_argument("--grid-prompts", type=int, default=GRID_PROMPTS)
    parser.add_argument("--grid-passes", type=int, default=GRID_PASSES)
    parser.add_argument(
        "--prompts", type=int, default=PROMPTS, help="per probe measurement, and min_requests"
    )
    parser.add_argument("--max-requests", type=int, default=MAX_REQUESTS)
    parser.add_argument("--ttft-ms", type=float, default=TTFT_MS)
    parser.add_argument("--slope", type=float, default=SLOPE)
    parser.add_argument("--slo-ms", type=float, default=52.0)
    parser.add_argument("--upper", type=int, default=UPPER)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        zero_server(args.ttft_ms, 2.0, degrade_after=0, degrade_slope=args.slope) as (url, pid),
        BenchClient(str(VLLM_BIN), {CLIENT_CPU}) as client,
    ):
        work = Path(tmp)
        passes: list[tuple[dict[float, float], float]] = []
        results: list[SearchResult] = []
        seeds = list(range(args.searches))
        shares = np.array_split(np.array(seeds), max(args.grid_passes - 1, 1))
        for n in range(args.grid_passes):
            passes.append(grid(url, pid, client, work, args, n))
            print(
                f"grid pass {n} p99 TTFT ms:", {int(k): round(v, 1) for k, v in sorted(passes[-1][0].items())}
            )
            if n < len(shares):
                for seed in shares[n]:
                    results.append(search(url, pid, client, work, args, int(seed)))
                    print(f"search {seed}: {results[-1].summary()}", flush=True)
        p99 = {load: float(np.median([p[load] for p, _ in passes])) for load in passes[0][0]}
        grid_s = float(np.mean([s for _, s in passes]))
        passing = [load for load in sorted(p99) if all(p99[x] <= args.slo_ms for x in p99 if x <= load)]
        reference = max(passing) if passing else 0.0
        print("median p99 TTFT ms by concurrency:", {int(k): round(v, 1) for k, v in sorted(p99.items())})
        print(
            f"reference capacity {reference:g} concurrent (SLO p99 TTFT <= {args.slo_ms:g} ms), "
            f"one grid pass {grid_s:.0f} server-s"
        )
        covered, cheap = 0, 0
        for seed, result in zip(seeds, results, strict=True):
            low = result.capacity_low if result.capacity_low is not None else 0.0
            high = result.capacity_high if result.capacity_high is not None else float("inf")
            inside = result.capacity_method is not None and low <= reference <= high
            covered += inside
            cheap += result.server_s <= TARGET_RATIO * grid_s
            print(
                f"search {seed}: {result.outcome} {result.capacity_text() if result.capacity else '-'}; "
                f"contains the reference: {inside}; server-s {result.server_s:.0f} = "
                f"{result.server_s / grid_s:.2f} x one grid pass's"
            )
        print(
            f"intervals containing the reference: {covered} of {args.searches} (target >= {TARGET_COVERED});"
            f" searches within {TARGET_RATIO:g} x one grid pass's server-seconds: {cheap} of {args.searches}"
        )


if __name__ == "__main__":
    main()
