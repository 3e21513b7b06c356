"""Coverage of the quality figures' 95% intervals (accelbench.quality.accuracy,
accelbench.lake.imported_quality) on simulated answers of known accuracy, and how often the quality gate
decides.

Model: a question set of `--questions` questions; the reference answers each right with its own chance
(questions differ: a beta(a, b) draw per question with mean `--reference` and concentration 4, so some are
easy, some hard); the candidate answers as the reference did, except that it loses a right answer with chance
`loss` and gains a wrong one with chance `gain` (a quantization flips a few near-ties either way). The true
accuracy ratio is the candidate's expected accuracy over the reference's, over the question set's
chances: what the paired interval should cover for that question set.

Methods:
- Wilson score (accuracy): scipy's binomtest(...).proportion_ci(method="wilson");
- paired bootstrap percentile (the ratio measured in a campaign: both answer the same questions);
- unpaired parametric bootstrap (the ratio of two imported results files: no per-question answers).

Coverage is the share of simulations whose interval holds the true value, with its Monte-Carlo standard
error. "Gate" counts the paired interval's verdict against 99%: pass / fail / undecided.

Run: .venv/bin/python benchmarks/quality_intervals.py [--sims 400] [--questions 200]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from accelbench.lake.imported_quality import TaskResult, ratio_interval
from accelbench.quality.accuracy import accuracy, accuracy_ratio
from accelbench.quality.quality_gate import GATE_ACCURACY_RATIO, verdict


def simulate(
    rng: np.random.Generator, n: int, reference: float, loss: float, gain: float
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(candidate answers, reference answers, true candidate accuracy, true ratio) of one question set."""
    chance = rng.beta(4 * reference, 4 * (1 - reference), n)
    ref = (rng.random(n) < chance).astype(float)
    flip = rng.random(n)
    cand = np.where(ref == 1, (flip >= loss).astype(float), (flip < gain).astype(float))
    p_cand = chance * (1 - loss) + (1 - chance) * gain
    return cand, ref, float(p_cand.mean()), float(p_cand.mean() / chance.mean())


def _cov(held: int, sims: int) -> str:
    """A coverage with its Monte-Carlo standard error."""
    p = held / sims
    return f"{p:6.1%} ±{math.sqrt(p * (1 - p) / sims):5.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sims", type=int, default=400)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--reference", type=float, default=0.73)
    args = parser.parse_args()
    print(f"{args.sims} simulations, {args.questions} questions, reference accuracy ~{args.reference}")
    header = f"{'loss':>5} {'gain':>5} {'ratio':>6} | {'Wilson':>13} | {'paired':>13} {'half-w':>7} | "
    print(header + f"{'unpaired':>13} {'half-w':>7} | gate pass/fail/undecided")
    started = time.monotonic()
    for loss, gain in ((0.0, 0.0), (0.02, 0.02), (0.05, 0.0), (0.1, 0.02), (0.2, 0.0)):
        rng = np.random.default_rng(20261203)
        held = {"wilson": 0, "paired": 0, "unpaired": 0}
        widths: dict[str, list[float]] = {"paired": [], "unpaired": []}
        gates = {"pass": 0, "fail": 0, "undecided": 0}
        ratios = []
        for i in range(args.sims):
            cand, ref, p_cand, true_ratio = simulate(rng, args.questions, args.reference, loss, gain)
            ratios.append(true_ratio)
            acc = accuracy(cand)
            held["wilson"] += acc.low <= p_cand <= acc.high  # type: ignore[operator]
            paired = accuracy_ratio(cand, ref, seed=i)
            if paired.low is not None and paired.high is not None:
                held["paired"] += paired.low <= true_ratio <= paired.high
                widths["paired"].append((paired.high - paired.low) / 2)
            gates[verdict(paired.low, paired.high, at_least=GATE_ACCURACY_RATIO)] += 1
            n = args.questions
            unpaired = ratio_interval(
                TaskResult("t", "acc", cand.mean(), n, None, "d"),
                TaskResult("t", "acc", ref.mean(), n, None, "d"),
                i,
            )
            if unpaired.low is not None and unpaired.high is not None:
                held["unpaired"] += unpaired.low <= true_ratio <= unpaired.high
                widths["unpaired"].append((unpaired.high - unpaired.low) / 2)

        print(
            f"{loss:5.2f} {gain:5.2f} {np.mean(ratios):6.3f} | {_cov(held['wilson'], args.sims)} | "
            f"{_cov(held['paired'], args.sims)} {np.median(widths['paired']):7.3f} | "
            f"{_cov(held['unpaired'], args.sims)} {np.median(widths['unpaired']):7.3f} | "
            f"{gates['pass']}/{gates['fail']}/{gates['undecided']}"
        )
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
