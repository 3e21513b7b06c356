"""A configuration's accuracy against its reference's on the same questions, with intervals.

- Accuracy: the share of questions answered right, with its Wilson score 95% interval (scipy's
  `binomtest(...).proportion_ci`), which keeps its coverage near 95% for shares near 0 or 1 where the
  normal approximation does not.
- Accuracy against the reference: the ratio of the two accuracies on the same questions (MLPerf's rule is a
  share of the reference's accuracy, 99%), with a paired bootstrap 95% interval over the questions (scipy's
  `bootstrap(..., paired=True)`, percentile): a question answered alike by both moves neither side, so the
  ratio of two configurations that agree everywhere is 1 with no width.

The quality gate that judges the ratio is `accelbench.quality.quality_gate`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from accelbench.core.intervals import CONFIDENCE, Interval

BOOTSTRAP_RESAMPLES = 9999


def accuracy(correct: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """The share of `correct` (1/0 per question) with its Wilson score interval."""
    from scipy.stats import binomtest

    n = len(correct)
    if n == 0:
        return Interval(None, None, None, confidence, "no questions")
    k = round(sum(correct))
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(k / n, float(ci.low), float(ci.high), confidence, f"Wilson score, {n} questions")


def accuracy_ratio(
    candidate: Sequence[float], reference: Sequence[float], confidence: float = CONFIDENCE, seed: int = 0
) -> Interval:
    """accuracy(candidate) / accuracy(reference) over the same questions (in the same order), with a paired
    bootstrap percentile interval. None where the reference answered nothing right."""
    from scipy.stats import bootstrap

    if len(candidate) != len(reference):
        raise ValueError(f"{len(candidate)} answers against the reference's {len(reference)}")
    c, r = np.asarray(candidate, dtype=float), np.asarray(reference, dtype=float)
    method = f"paired bootstrap over {len(c)} questions"
    if len(c) == 0 or r.sum() == 0:
        return Interval(None, None, None, confidence, method)
    estimate = float(c.mean() / r.mean())
    if np.array_equal(c, r):
        return Interval(estimate, estimate, estimate, confidence, method + " (answered alike)")

    def ratio(cand: np.ndarray, ref: np.ndarray, axis: int = -1) -> np.ndarray:
        ref_mean = ref.mean(axis=axis)
        return np.where(ref_mean > 0, cand.mean(axis=axis) / np.where(ref_mean > 0, ref_mean, 1), np.nan)

    found = bootstrap(
        (c, r),
        ratio,
        paired=True,
        vectorized=True,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    low, high = found.confidence_interval
    return Interval(estimate, float(low), float(high), confidence, method)
