"""How closely a configuration's next-token distributions follow the reference configuration's (bf16) on
the same prompts: KL divergence per position, and whether the most likely token agrees.

vLLM's OpenAI API gives the top k log-probabilities of each position (`prompt_logprobs`), not the whole
vocabulary. The divergence is therefore taken over buckets: each token both top-k lists hold is a bucket of
its own, and everything else is one "rest" bucket with what is left of each distribution's mass. Merging
outcomes never raises a KL divergence (the data-processing inequality), so `bucket_kl` is a lower bound of
the full-vocabulary KL(reference || candidate); the page says "top-k KL". With the same weights on both
sides it is 0 up to the logprobs' rounding, which is the pairing's sanity check. The bound is as good as the
two lists overlap: lists that share nothing give 0, so the reference's mass on the shared tokens is reported
beside it (`shared_mass`, near 1 when the bound is tight), and so is the top-1 agreement.

The KL terms come from `scipy.special.rel_entr`; the intervals from `accelbench.core.intervals` and scipy:
positions of one prompt are not independent, so the mean KL and the top-1 agreement are averaged per prompt
first and their 95% intervals are Student t intervals over the prompts; the p99 KL is the order-statistic
interval over all positions (which treats positions as independent: it says so in its method).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from accelbench.core.intervals import Interval, mean_interval, quantile_interval

Logprobs = Mapping[str, float]  # one position's top-k: token -> natural-log probability
REST_TOLERANCE = 1e-6  # a probability mass this small is rounding (float32 logprobs of a whole list)


def bucket_kl(reference: Logprobs, candidate: Logprobs) -> float:
    """KL(reference || candidate) in nats over the buckets the two top-k lists share (see the module):
    a lower bound of the full-vocabulary divergence. Both lists must be non-empty."""
    from scipy.special import rel_entr

    if not reference or not candidate:
        raise ValueError("bucket_kl needs a non-empty top-k on both sides")
    shared = sorted(set(reference) & set(candidate))
    p = np.array([math.exp(reference[t]) for t in shared])
    q = np.array([math.exp(candidate[t]) for t in shared])
    # The rest of each distribution's mass. Logprobs are rounded (float32 in vLLM): a rest under
    # REST_TOLERANCE is 0, and a reference rest above it is compared with at least that much candidate rest
    # (a list that seems to hold all the mass holds it only to its rounding), never with 0 (an infinite KL).
    p_rest, q_rest = 1.0 - float(p.sum()), 1.0 - float(q.sum())
    p_rest = p_rest if p_rest > REST_TOLERANCE else 0.0
    q_rest = max(q_rest, REST_TOLERANCE) if p_rest else max(q_rest, 0.0)
    p, q = np.append(p, p_rest), np.append(q, q_rest)
    return float(np.sum(rel_entr(p, q)))


def shared_mass(reference: Logprobs, candidate: Logprobs) -> float:
    """The reference's probability on the tokens both top-k lists hold: how much of it `bucket_kl` sees
    token by token."""
    return float(sum(math.exp(reference[t]) for t in set(reference) & set(candidate)))


def top1(logprobs: Logprobs) -> str:
    """The most likely token of a top-k list (the first in sort order on a tie)."""
    return min(logprobs, key=lambda t: (-logprobs[t], t))


@dataclass(frozen=True)
class Fidelity:
    """A configuration against the reference over a prompt set: figures with their 95% intervals."""

    mean_kl: Interval
    p99_kl: Interval
    top1_agreement: Interval
    prompts: int
    positions: int
    top_k: int
    shared_mass: float  # the reference's mean probability on the tokens both lists hold (1: a tight bound)

    def columns(self) -> dict[str, float | int | str | None]:
        """The figures as the lake's `quality` columns (accelbench.lake.schemas.QUALITY)."""
        return {
            "kl_mean": self.mean_kl.estimate,
            "kl_mean_low": self.mean_kl.low,
            "kl_mean_high": self.mean_kl.high,
            "kl_p99": self.p99_kl.estimate,
            "kl_p99_low": self.p99_kl.low,
            "kl_p99_high": self.p99_kl.high,
            "top1_agreement": self.top1_agreement.estimate,
            "top1_low": self.top1_agreement.low,
            "top1_high": self.top1_agreement.high,
            "shared_mass": self.shared_mass,
            "prompts": self.prompts,
            "positions": self.positions,
            "top_k": self.top_k,
            "fidelity_method": f"mean KL and top-1: {self.mean_kl.method}; p99: {self.p99_kl.method}",
        }

    def words(self) -> str:
        """ "top-20 KL mean 0.0031 [0.0024, 0.0038] nats, p99 0.021, top-1 agreement 98.7% [97.9, 99.4]
        over 64 prompts (2,048 positions)"."""

        def ends(i: Interval, scale: float = 1.0, fmt: str = ".4f") -> str:
            return ", ".join("-" if v is None else f"{v * scale:{fmt}}" for v in (i.low, i.high))

        assert self.mean_kl.estimate is not None and self.top1_agreement.estimate is not None
        p99 = "-" if self.p99_kl.estimate is None else f"{self.p99_kl.estimate:.4f}"
        return (
            f"top-{self.top_k} KL mean {self.mean_kl.estimate:.4f} [{ends(self.mean_kl)}] nats, p99 {p99}, "
            f"top-1 agreement {self.top1_agreement.estimate:.1%} [{ends(self.top1_agreement, 100, '.1f')}] "
            f"over {self.prompts} prompts ({self.positions:,} positions; {self.shared_mass:.1%} of the "
            "reference's mass on shared tokens)"
        )


def fidelity(
    reference: Sequence[Sequence[Logprobs]], candidate: Sequence[Sequence[Logprobs]], top_k: int
) -> Fidelity:
    """`reference` and `candidate`: per prompt, per position, the top-k logprobs of the same prompts in the
    same order (a position either side lacks is skipped). The mean KL and top-1 agreement are averaged per
    prompt, with t intervals over prompts; the p99 KL over all positions, with its order-statistic
    interval."""
    if len(reference) != len(candidate):
        raise ValueError(f"{len(reference)} reference prompts against {len(candidate)} candidate prompts")
    per_prompt_kl, per_prompt_agree, every_kl, masses = [], [], [], []
    for ref_positions, cand_positions in zip(reference, candidate, strict=True):
        pairs = [(r, c) for r, c in zip(ref_positions, cand_positions, strict=False) if r and c]
        if not pairs:
            continue
        kls = [bucket_kl(r, c) for r, c in pairs]
        every_kl += kls
        masses += [shared_mass(r, c) for r, c in pairs]
        per_prompt_kl.append(float(np.mean(kls)))
        per_prompt_agree.append(float(np.mean([top1(r) == top1(c) for r, c in pairs])))
    if not every_kl:
        raise ValueError("no position has logprobs on both sides")
    p99 = quantile_interval(np.asarray(every_kl), 0.99)
    agree = mean_interval(per_prompt_agree)
    agree = Interval(
        agree.estimate,
        None if agree.low is None else max(0.0, agree.low),
        None if agree.high is None else min(1.0, agree.high),
        agree.confidence,
        f"{agree.method}, over prompts",
    )
    mean = mean_interval(per_prompt_kl)
    low = None if mean.low is None else max(0.0, mean.low)  # a divergence is never negative
    return Fidelity(
        mean_kl=Interval(mean.estimate, low, mean.high, mean.confidence, f"{mean.method}, over prompts"),
        p99_kl=replace(p99, method=f"{p99.method}, positions as independent"),
        top1_agreement=agree,
        prompts=len(per_prompt_kl),
        positions=len(every_kl),
        top_k=top_k,
        shared_mass=float(np.mean(masses)),
    )
