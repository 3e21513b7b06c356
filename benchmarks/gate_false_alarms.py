"""The regression gate's test on simulated points (accelbench.core.changes): its A/A false-alarm rate and
its A/B power, beside a plain hierarchical bootstrap (repeats, then requests) that it replaced.

Each simulated point is `repeats` repeats of `requests` requests; a repeat's latencies are lognormal
(median 100 ms, log sd 0.5) times its own host factor exp(N(0, host_sd)) (per-repeat host noise); its
throughput is 1000 over the same factor. A/A: both points drawn alike; A/B: every latency of the second
+20% (its throughput / 1.2). Rates are over `--sims` pairs (min effect 0: the test itself, at 5%), and
over `--matrices` matrices of 12 points x 3 metrics gated together (min effect 5%, BH at FDR 5%).

"gate: t" is accelbench.core.changes (a pooled t test on the repeats' log percentiles or throughputs);
"t, floored" the same with each repeat's variance at least its requests' sampling variance (Maritz-Jarrett,
tried and dropped); "bootstrap" a hierarchical bootstrap percentile interval (repeats, then requests).

Run: .venv/bin/python benchmarks/gate_false_alarms.py [--sims 1000] [--boot-sims 200] [--matrices 200]
"""

from __future__ import annotations

import argparse

import numpy as np
from accelbench.core.changes import Change, _within_variance, fdr_verdicts, quantile_change, repeats_change
from scipy import stats


def point(rng: np.random.Generator, repeats: int, requests: int, host_sd: float, factor: float = 1.0):
    """(request latencies per repeat, throughput per repeat) of one simulated point."""
    hosts = np.exp(rng.normal(0, host_sd, repeats)) * factor
    groups = [h * 100 * np.exp(rng.normal(0, 0.5, requests)) for h in hosts]
    return groups, [1000 / h for h in hosts]


def bootstrap_alarm(rng: np.random.Generator, before, after, q: float, resamples: int = 400) -> bool:
    """A plain hierarchical bootstrap of log(pooled q quantile after / before): repeats with replacement,
    then requests within each; an alarm when its 95% percentile interval excludes 0."""

    def draws(groups) -> np.ndarray:
        stack = np.stack(groups)  # repeats x requests
        r, n = stack.shape
        which = rng.integers(0, r, (resamples, r))
        idx = rng.integers(0, n, (resamples, r, n))
        pooled = stack[which[:, :, None], idx].reshape(resamples, r * n)
        return np.log(np.quantile(pooled, q, axis=1))

    d = draws(after) - draws(before)
    low, high = np.quantile(d, [0.025, 0.975])
    return bool(low > 0 or high < 0)


def floored_alarm(before, after, q: float) -> bool:
    """The pooled t test on the repeats' log percentiles with each repeat's variance at least its
    requests' sampling variance (Maritz-Jarrett): the variant tried and dropped for its power."""
    la, lb = (np.log([np.quantile(g, q) for g in side]) for side in (before, after))
    df = la.size + lb.size - 2
    spread = (((la - la.mean()) ** 2).sum() + ((lb - lb.mean()) ** 2).sum()) / df
    floor = float(np.mean([_within_variance(g, q) for g in (*before, *after)]))
    se = np.sqrt(max(spread, floor) * (1 / la.size + 1 / lb.size))
    return bool(2 * stats.t(df).sf(abs(lb.mean() - la.mean()) / se) <= 0.05)


def flagged(c: Change) -> bool:
    return c.verdict in ("regression", "improvement")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--boot-sims", type=int, default=200)
    parser.add_argument("--matrices", type=int, default=200)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    n = args.requests
    print(f"{n} requests per repeat; A/A false alarms with min effect 0 (nominal 5%); A/B: +20%")
    print()
    print("| repeats | host sd | figure | test | A/A false alarms | A/B +20% found |")
    print("|---:|---:|---|---|---:|---:|")
    for repeats in (2, 3, 5):
        for host_sd in (0.02, 0.10, 0.25):
            rng = np.random.default_rng(repeats * 1000 + int(host_sd * 100))
            rates: dict[tuple[str, str], list[int]] = {}
            sims: dict[tuple[str, str], int] = {}
            for sim in range(args.sims):
                for k, factor in enumerate((1.0, 1.2)):
                    (ga, ta), (gb, tb) = (
                        point(rng, repeats, n, host_sd),
                        point(rng, repeats, n, host_sd, factor),
                    )
                    found: dict[tuple[str, str], bool] = {}
                    for name, q in (("p99", 0.99), ("p50", 0.5)):
                        c = fdr_verdicts([quantile_change(ga, gb, q, min_effect=0.0)])[0]
                        found[name, "gate: t"] = flagged(c)
                        found[name, "t, floored"] = floored_alarm(ga, gb, q)
                        if sim < args.boot_sims:
                            found[name, "bootstrap"] = bootstrap_alarm(rng, ga, gb, q)
                    cu = fdr_verdicts([repeats_change(ta, tb, worse_when=-1, min_effect=0.0)])[0]
                    found["throughput", "gate: t"] = flagged(cu)
                    for key, hit in found.items():
                        rates.setdefault(key, [0, 0])[k] += hit
                        if k == 0:
                            sims[key] = sims.get(key, 0) + 1
            for (figure, test), (aa, ab) in sorted(rates.items()):
                count = sims[figure, test]
                print(
                    f"| {repeats} | {host_sd:.0%} | {figure} | {test} | {aa / count:.1%} ({count}) "
                    f"| {ab / count:.1%} |"
                )
    print()
    print("| repeats | host sd | matrices with any A/A flag (12 points x 3 metrics, BH 5%, min effect 5%) |")
    print("|---:|---:|---:|")
    for repeats in (2, 3):
        for host_sd in (0.02, 0.10, 0.25):
            rng = np.random.default_rng(7 + repeats)
            any_flag = 0
            for _ in range(args.matrices):
                changes = []
                for _ in range(12):
                    (ga, ta), (gb, tb) = point(rng, repeats, n, host_sd), point(rng, repeats, n, host_sd)
                    changes += [
                        quantile_change(ga, gb, 0.99),
                        quantile_change(ga, gb, 0.5),
                        repeats_change(ta, tb, worse_when=-1),
                    ]
                any_flag += any(flagged(c) for c in fdr_verdicts(changes))
            print(f"| {repeats} | {host_sd:.0%} | {any_flag / args.matrices:.1%} ({args.matrices}) |")


if __name__ == "__main__":
    main()
