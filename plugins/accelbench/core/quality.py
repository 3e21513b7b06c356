"""A configuration's accuracy against its reference's on the same questions, with intervals, and the quality
gate a configuration must pass to be a headline answer.

- Accuracy: the share of questions answered right, with its Wilson score 95% interval (scipy's
  `binomtest(...).proportion_ci`), which keeps its coverage near 95% for shares near 0 or 1 where the
  normal approximation does not.
- Accuracy against the reference: the ratio of the two accuracies on the same questions (MLPerf's rule is a
  share of the reference's accuracy, 99%), with a paired bootstrap 95% interval over the questions (scipy's
  `bootstrap(..., paired=True)`, percentile): a question answered alike by both moves neither side, so the
  ratio of two configurations that agree everywhere is 1 with no width.
- The gate: the ratio at least GATE_ACCURACY_RATIO and the mean top-k KL at most GATE_MEAN_KL. Decided by
  intervals like the SLOs: "pass" when the whole interval is inside, "fail" when it is outside, "undecided"
  between (more questions or prompts narrow it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from accelbench.core.intervals import CONFIDENCE, Interval

GATE_ACCURACY_RATIO = 0.99  # MLPerf Inference: a quantized submission keeps at least 99% of the reference's
# nats of top-20 KL, mean over prompts. Measured here (RESULTS.md, "Quantized serving"): W8A8 of the embedded
# model 0.05, its bf16 reference against itself 0.0007; llama.cpp's perplexity tool reports a Q8_0 GGUF of a
# 7B model near 0.001-0.003 and Q4_K_M near 0.03 (full vocabulary). The limit passes what keeps the
# reference's next tokens nearly always and refuses a scheme that moves them often.
GATE_MEAN_KL = 0.1
BOOTSTRAP_RESAMPLES = 9999
Verdict = Literal["pass", "fail", "undecided"]


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


def verdict(
    low: float | None, high: float | None, *, at_least: float | None = None, at_most: float | None = None
) -> Verdict:
    """An interval against one limit: inside whole, outside whole, or straddling (undecided)."""
    if at_least is not None:
        if low is not None and low >= at_least:
            return "pass"
        return "fail" if high is not None and high < at_least else "undecided"
    assert at_most is not None
    if high is not None and high <= at_most:
        return "pass"
    return "fail" if low is not None and low > at_most else "undecided"


def gate(
    ratio: Interval | None,
    mean_kl: Interval | None,
    min_ratio: float = GATE_ACCURACY_RATIO,
    max_kl: float = GATE_MEAN_KL,
) -> tuple[Verdict, str]:
    """The quality gate of one configuration, and why: both limits must pass; either failing fails it."""
    found: list[tuple[Verdict, str]] = []
    if ratio is None or ratio.estimate is None:
        found.append(("undecided", "no accuracy against the reference"))
    else:
        bounds = f"[{_pct(ratio.low)}, {_pct(ratio.high)}]"
        text = f"accuracy {ratio.estimate:.1%} of the reference's {bounds} vs >= {min_ratio:.0%}"
        found.append((verdict(ratio.low, ratio.high, at_least=min_ratio), text))
    if mean_kl is None or mean_kl.estimate is None:
        found.append(("undecided", "no next-token divergence from the reference"))
    else:
        bounds = f"[{_num(mean_kl.low)}, {_num(mean_kl.high)}]"
        text = f"mean KL {mean_kl.estimate:.4f} {bounds} nats vs <= {max_kl:g}"
        found.append((verdict(mean_kl.low, mean_kl.high, at_most=max_kl), text))
    verdicts = {v for v, _ in found}
    overall: Verdict = "fail" if "fail" in verdicts else "undecided" if "undecided" in verdicts else "pass"
    why = "; ".join(text for v, text in found if overall == "pass" or v == overall)
    return overall, why


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
