"""Coverage of the suite's 95% intervals (accelbench.core.intervals) on simulated samples of known
quantiles, beside the candidates the pooled interval was chosen against.

Model: a repeat's latencies are lognormal (median 100 ms, log sd 0.5) times the repeat's own host speed
exp(N(0, host_sd)) (host noise: one repeat 1.3x slower is one sd at 0.25). The true value a pooled interval
should cover is the median repeat's quantile, 100 exp(z_q 0.5): the quantile of a repeat at the host's
median speed. Within one repeat: that repeat's quantile. Mean: normal repeats, their mean.

Methods:
- mean_interval: Student t over the repeats (throughput);
- quantile_interval: fractional order statistics within one repeat (Hutson 1999; one side open, and the
  other one-sided at 95%, when the sample is too small for it);
- pooled_quantile_interval (chosen): t over the repeats' log quantiles, each median-unbiased (type 8);
- t over log quantiles, numpy's default (linear) quantile: the same without the bias correction;
- hierarchical bootstrap: resample repeats, then requests within each; percentile interval of the pooled
  quantile (fewer simulations: --boot-sims, --resamples);
- pooled order statistics: every request of every repeat as one sample (ignores the repeats).

Coverage is the share of simulations whose interval holds the true value, with its Monte-Carlo standard
error sqrt(p (1 - p) / sims); the half-width is (high - low) / 2 / estimate, its median and mean over
the simulations (one-sided intervals have none: "open").

Run: .venv/bin/python benchmarks/interval_coverage.py [--sims 1000] [--host-sd 0.25]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Iterable

import numpy as np
from accelbench.core.intervals import mean_interval, pooled_quantile_interval, quantile_bounds
from scipy import stats

SIGMA = 0.5


def true_quantile(q: float) -> float:
    return float(100 * math.exp(stats.norm.ppf(q) * SIGMA))


def samples(rng: np.random.Generator, sims: int, repeats: int, n: int, host_sd: float) -> np.ndarray:
    speed = np.exp(rng.normal(0.0, host_sd, (sims, repeats, 1)))
    return 100 * np.exp(rng.normal(0.0, SIGMA, (sims, repeats, n))) * speed


def row(method: str, n: int, repeats: int, q: str, lows, highs, estimates, true: float) -> str:
    lows, highs, estimates = (None if a is None else np.asarray(a, float) for a in (lows, highs, estimates))
    sims = len(estimates)
    hit = np.ones(sims, bool)
    if lows is not None:
        hit &= lows <= true
    if highs is not None:
        hit &= true <= highs
    p = float(hit.mean())
    se = math.sqrt(p * (1 - p) / sims)
    if lows is None or highs is None:
        width = "open | open"
    else:
        ratios = (highs - lows) / 2 / estimates
        width = f"{float(np.median(ratios)):.0%} | {float(np.mean(ratios)):.0%}"
    return f"| {method} | {n} | {repeats} | {q} | {sims} | {p:.1%} ± {se:.1%} | {width} |"


def bootstrap(groups: np.ndarray, q: float, rng: np.random.Generator, resamples: int) -> tuple[float, float]:
    """Percentile interval of the pooled quantile over resamples of repeats, then requests within each."""
    r, n = groups.shape
    which = rng.integers(0, r, (resamples, r))
    idx = rng.integers(0, n, (resamples, r, n))
    pooled = groups[which[:, :, None], idx].reshape(resamples, r * n)
    low, high = np.quantile(np.quantile(pooled, q, axis=1), [0.025, 0.975])
    return float(low), float(high)


def log_t(quantiles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """t interval over log quantiles, vectorised over simulations (rows)."""
    k = quantiles.shape[1]
    logs = np.log(quantiles)
    centre, half = logs.mean(1), stats.t.ppf(0.975, k - 1) * logs.std(1, ddof=1) / math.sqrt(k)
    return np.exp(centre - half), np.exp(centre + half), np.exp(centre)


def unpack(intervals: Iterable) -> tuple:
    rows = list(intervals)
    lows = None if any(i.low is None for i in rows) else [i.low for i in rows]
    highs = None if any(i.high is None for i in rows) else [i.high for i in rows]
    return lows, highs, [i.estimate for i in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--boot-sims", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--host-sd", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print("| method | requests | repeats | quantile | sims | coverage ± MC se | half-width, median | mean |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for repeats in (2, 3, 5):
        draws = rng.normal(50.0, 5.0, (args.sims, repeats))
        print(
            row(
                "mean_interval (t, normal repeats)",
                1,
                repeats,
                "mean",
                *unpack(map(mean_interval, draws)),
                50.0,
            )
        )
    for n in (50, 200, 1000):
        for q in (0.5, 0.9, 0.99):
            x = samples(rng, args.sims, 1, n, 0.0)[:, 0]
            estimate, low, high = quantile_bounds(x, q)
            print(
                row(
                    "quantile_interval (order statistics)",
                    n,
                    1,
                    f"p{q * 100:g}",
                    low,
                    high,
                    estimate,
                    true_quantile(q),
                )
            )
    for repeats in (2, 3, 5):
        for n in (200, 1000):
            for q in (0.5, 0.99):
                name, true = f"p{q * 100:g}", true_quantile(q)
                x = samples(rng, args.sims, repeats, n, args.host_sd)
                chosen = unpack(pooled_quantile_interval(list(g), q) for g in x)
                print(row("**pooled_quantile_interval** (t, log, type 8)", n, repeats, name, *chosen, true))
                print(
                    row(
                        "t over log quantiles, linear",
                        n,
                        repeats,
                        name,
                        *log_t(np.quantile(x, q, axis=2)),
                        true,
                    )
                )
                _, low, high = quantile_bounds(x.reshape(args.sims, repeats * n), q)
                estimate = np.quantile(x.reshape(args.sims, repeats * n), q, axis=1)
                print(row("pooled order statistics", n, repeats, name, low, high, estimate, true))
                few = x[: args.boot_sims]
                bounds = np.array([bootstrap(g, q, rng, args.resamples) for g in few])
                estimate = np.quantile(few.reshape(len(few), repeats * n), q, axis=1)
                print(
                    row(
                        "hierarchical bootstrap", n, repeats, name, bounds[:, 0], bounds[:, 1], estimate, true
                    )
                )
    print(f"\nhost sd {args.host_sd}, seed {args.seed}, {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
