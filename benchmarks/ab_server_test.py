"""The A/B comparison's test over servers (accelbench.report.noise, `by_server`) on simulated campaigns: its
false alarms on A/A pairs, its interval's coverage and its power, beside the two tests it sits between.

A simulated campaign has three variants (a, a-again, b: the e2e test's), each `--rounds` servers of
`--repeats` repeats (the repeats split over the rounds); a server's figure is exp(N(0, sigma_server)) (its
host's state while it ran: CI's other lanes, a neighbour), a repeat's that times exp(N(0, sigma_repeat)). b
is `--effect` times a (0.5: the e2e test's throughput; 1 is an A/A pair).

- "repeats": the t test over each side's repeats (the test of one-round comparisons and of the gate),
  blind to the servers' spread;
- "servers": the t test over each side's servers alone (each the geometric mean of its repeats), 2 + 2
  servers: 2 df;
- "pooled": the product's (`core.changes.spread_change`): over servers, against the servers' spread pooled
  over every variant's servers (a one-way layout's error term: servers - variants df);
- "+prior": that spread pooled with `core.changes.PRIOR_SPREAD` (12.6%, 3 df) as well: tried and dropped
  (its false alarms grow once the servers' spread exceeds the prior's).

Printed per server spread: the A/A false-alarm rate at 5% (min effect 0: the test itself; 5%: the
product's null), the share of 95% intervals holding the true change, and the power (change flagged, min
effect 5%) for b.

Run: .venv/bin/python benchmarks/ab_server_test.py [--sims 4000] [--rounds 2] [--effect 0.5]
"""

from __future__ import annotations

import argparse

import numpy as np
from accelbench.core.changes import (
    PRIOR_SPREAD,
    Change,
    Spread,
    repeat_spread,
    repeats_change,
    spread_change,
)


def campaign(rng: np.random.Generator, args: argparse.Namespace, sigma: float) -> list[np.ndarray]:
    """Per variant (a, a-again, b): its repeats' figures, servers x repeats a server."""
    each = args.repeats // args.rounds
    factors = [1.0, 1.0, args.effect]
    return [
        f
        * np.exp(
            rng.normal(0, sigma, (args.rounds, 1)) + rng.normal(0, args.sigma_repeat, (args.rounds, each))
        )
        for f in factors
    ]


def tests(variants: list[np.ndarray], other: int, min_effect: float) -> dict[str, Change]:
    """a against variant `other` by each of the three tests."""
    a, b = variants[0], variants[other]
    servers = [np.exp(np.log(v).mean(axis=1)) for v in variants]
    measured = repeat_spread([list(s) for s in servers]) or Spread()
    return {
        "repeats": repeats_change(a.ravel(), b.ravel(), min_effect=min_effect),
        "servers": repeats_change(servers[0], servers[other], min_effect=min_effect),
        "pooled": spread_change(servers[0], servers[other], measured, min_effect=min_effect),
        "+prior": spread_change(
            servers[0], servers[other], measured.pooled([PRIOR_SPREAD]), min_effect=min_effect
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sims", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=4, help="a variant's repeats, over its rounds")
    parser.add_argument("--sigma-repeat", type=float, default=0.05)
    parser.add_argument("--effect", type=float, default=0.5, help="b / a")
    parser.add_argument("--sigmas", default="0,0.05,0.126,0.25,0.5", help="servers' spreads (log sd)")
    parser.add_argument("--seed", type=int, default=48)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    names = ("repeats", "servers", "pooled", "+prior")
    print(
        f"{args.sims} campaigns each: 3 variants x {args.rounds} servers x {args.repeats // args.rounds}"
        f" repeats, repeat sd {args.sigma_repeat}, b = {args.effect} x a"
    )
    heads = ("A/A p <= 5%, min effect 0", "A/A p <= 5%, min effect 5%", "b: 95% coverage", "b: flagged")
    print(f"{'server sd':>9} | " + " | ".join(f"{h:^35}" for h in heads))
    print(f"{'':>9} | " + " | ".join(" ".join(f"{n:>8}" for n in names) for _ in heads))
    for sigma in (float(s) for s in args.sigmas.split(",")):
        alarms, product, covered, flagged = (dict.fromkeys(names, 0) for _ in range(4))
        for _ in range(args.sims):
            variants = campaign(rng, args, sigma)
            for name, c in tests(variants, 1, 0.0).items():
                alarms[name] += c.p is not None and c.p <= 0.05
            for name, c in tests(variants, 1, 0.05).items():
                product[name] += c.p is not None and c.p <= 0.05
            for name, c in tests(variants, 2, 0.05).items():
                truth = args.effect - 1
                covered[name] += c.low is not None and c.high is not None and c.low <= truth <= c.high
                flagged[name] += c.p is not None and c.p <= 0.05
        rates = [
            " ".join(f"{r[n] / args.sims:>8.1%}" for n in names) for r in (alarms, product, covered, flagged)
        ]
        print(f"{sigma:>9.3f} | " + " | ".join(rates))


if __name__ == "__main__":
    main()
