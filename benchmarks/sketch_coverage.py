"""Coverage and width of the report's latency intervals through the lake's sketches (issue 50) against the
exact path, on the same simulated samples as benchmarks/interval_coverage.py.

Model (interval_coverage.py's): a repeat's latencies are lognormal (median 100 ms, log sd 0.5) times the
repeat's host speed exp(N(0, host sd)); the truth an interval over repeats should hold is the median
repeat's quantile, 100 exp(z_q 0.5); within one repeat, that quantile (host sd 0). Each simulated repeat is
given to `pooled_quantile_interval` twice: as its values (the exact path) and as the sketch the lake keeps
(`Distribution.of(...).sketched()`: a DDSketch of relative accuracy 0.1%, bounds at its bins' ends, forced
even where ingest would keep the values). Printed: coverage of each path with its Monte-Carlo standard
error, and the median ratio of the sketch path's width to the exact path's on the same sample.

Run: .venv/bin/python benchmarks/sketch_coverage.py [--sims 1000] [--host-sd 0.25]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from accelbench.core.intervals import pooled_quantile_interval
from accelbench.core.sketches import Distribution
from scipy import stats

SIGMA = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--host-sd", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    quantiles = (0.5, 0.9, 0.99)
    print(
        "| requests a run | repeats | quantile | sims | exact: coverage ± se | sketch: coverage ± se "
        "| width sketch / exact, median (90th pct) |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|")
    started = time.perf_counter()
    for n in (1_000, 10_000, 100_000):
        for repeats in (1, 3):
            host_sd = 0.0 if repeats == 1 else args.host_sd
            hits = {q: np.zeros((2, args.sims), bool) for q in quantiles}
            ratios = {q: np.full(args.sims, np.nan) for q in quantiles}
            for sim in range(args.sims):
                speeds = np.exp(rng.normal(0.0, host_sd, repeats))
                groups = [100 * np.exp(rng.normal(0.0, SIGMA, n)) * s for s in speeds]
                sketches = [Distribution.of(g).sketched() for g in groups]
                for q in quantiles:
                    true = 100 * math.exp(stats.norm.ppf(q) * SIGMA)
                    for path, given in enumerate((groups, sketches)):
                        found = pooled_quantile_interval(given, q)
                        low = -math.inf if found.low is None else found.low
                        high = math.inf if found.high is None else found.high
                        hits[q][path, sim] = low <= true <= high
                        if path == 0:
                            exact_width = high - low
                        else:
                            ratios[q][sim] = (high - low) / exact_width
            for q in quantiles:
                cover = hits[q].mean(axis=1)
                se = np.sqrt(cover * (1 - cover) / args.sims)
                finite = ratios[q][np.isfinite(ratios[q])]
                width = f"{np.median(finite):.3f} ({np.quantile(finite, 0.9):.3f})" if finite.size else "open"
                print(
                    f"| {n:,} | {repeats} | p{q * 100:g} | {args.sims} | {cover[0]:.1%} ± {se[0]:.1%} "
                    f"| {cover[1]:.1%} ± {se[1]:.1%} | {width} |",
                    flush=True,
                )
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
