"""The quality gate a configuration must pass to be a headline answer: the accuracy ratio to the reference's
(`accelbench.quality.accuracy`) at least GATE_ACCURACY_RATIO and the mean top-k KL
(`accelbench.quality.fidelity`) at most GATE_MEAN_KL. Decided by intervals like the SLOs: "pass" when the
whole interval is inside, "fail" when it is outside, "undecided" between (more questions or prompts narrow
it). Not the regression gate of vLLM versions (`accelbench.regression.gate`)."""

from __future__ import annotations

from typing import Literal

from accelbench.core.intervals import Interval

GATE_ACCURACY_RATIO = 0.99  # MLPerf Inference: a quantized submission keeps at least 99% of the reference's
# nats of top-20 KL, mean over prompts. Measured here (RESULTS.md, "Quantized serving"): W8A8 of the embedded
# model 0.05, its bf16 reference against itself 0.0007; llama.cpp's perplexity tool reports a Q8_0 GGUF of a
# 7B model near 0.001-0.003 and Q4_K_M near 0.03 (full vocabulary). The limit passes what keeps the
# reference's next tokens nearly always and refuses a scheme that moves them often.
GATE_MEAN_KL = 0.1
QualityVerdict = Literal["pass", "fail", "undecided"]  # values of the report's `quality_gate` column


def verdict(
    low: float | None, high: float | None, *, at_least: float | None = None, at_most: float | None = None
) -> QualityVerdict:
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
) -> tuple[QualityVerdict, str]:
    """The quality gate of one configuration, and why: both limits must pass; either failing fails it."""
    found: list[tuple[QualityVerdict, str]] = []
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
    overall: QualityVerdict = (
        "fail" if "fail" in verdicts else "undecided" if "undecided" in verdicts else "pass"
    )
    why = "; ".join(text for v, text in found if overall == "pass" or v == overall)
    return overall, why


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
