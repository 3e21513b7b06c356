"""KL divergence and top-1 agreement of next-token distributions (accelbench.quality.fidelity), against hand
computations and scipy's own divergence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from accelbench.quality.fidelity import bucket_kl, fidelity, shared_mass, top1
from scipy.special import rel_entr
from scipy.stats import entropy


def _lp(probs: dict[str, float]) -> dict[str, float]:
    return {t: math.log(p) for t, p in probs.items()}


def test_bucket_kl_by_hand() -> None:
    # Both lists hold a and b; the rest is 0.1 on each side.
    ref, cand = _lp({"a": 0.6, "b": 0.3}), _lp({"a": 0.5, "b": 0.4})
    by_hand = 0.6 * math.log(0.6 / 0.5) + 0.3 * math.log(0.3 / 0.4) + 0.1 * math.log(0.1 / 0.1)
    assert bucket_kl(ref, cand) == pytest.approx(by_hand, rel=1e-12)
    # c is in the reference's list only: it falls into the rest buckets, 0.4 against 0.5.
    ref, cand = _lp({"a": 0.5, "c": 0.3}), _lp({"a": 0.5, "d": 0.2})
    assert bucket_kl(ref, cand) == pytest.approx(0.5 * math.log(1) + 0.5 * math.log(0.5 / 0.5), abs=1e-12)
    ref, cand = _lp({"a": 0.7, "c": 0.2}), _lp({"a": 0.4, "d": 0.5})
    assert bucket_kl(ref, cand) == pytest.approx(0.7 * math.log(0.7 / 0.4) + 0.3 * math.log(0.3 / 0.6))
    assert shared_mass(ref, cand) == pytest.approx(0.7)
    assert bucket_kl(ref, ref) == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="non-empty"):
        bucket_kl({}, cand)


def test_with_the_whole_vocabulary_it_is_scipys_kl_and_with_top_k_a_lower_bound() -> None:
    rng = np.random.default_rng(7)
    vocabulary = [f"t{i}" for i in range(50)]
    for _ in range(200):
        p, q = rng.dirichlet(np.full(50, 0.3)), rng.dirichlet(np.full(50, 0.3))
        p = 0.8 * p + 0.2 * q  # related distributions, as a quantized model's are to its reference
        full = float(entropy(p, q))
        assert full == pytest.approx(float(np.sum(rel_entr(p, q))))
        ref, cand = (
            dict(zip(vocabulary, np.log(p), strict=True)),
            dict(zip(vocabulary, np.log(q), strict=True)),
        )
        assert bucket_kl(ref, cand) == pytest.approx(full, rel=1e-9)  # every token a bucket: the full KL
        top = lambda d: dict(sorted(d.items(), key=lambda kv: -kv[1])[:10])  # noqa: E731
        assert bucket_kl(top(ref), top(cand)) <= full + 1e-12  # merging outcomes never raises a KL


def test_top1_and_a_prompt_sets_figures() -> None:
    assert top1(_lp({"a": 0.2, "b": 0.7, "c": 0.1})) == "b"
    assert top1({"x": -1.0, "w": -1.0}) == "w"  # a tie: the first in sort order
    same = [[_lp({"a": 0.6, "b": 0.3}), _lp({"c": 0.9})] for _ in range(8)]
    itself = fidelity(same, same, top_k=2)
    assert itself.mean_kl.estimate == pytest.approx(0.0, abs=1e-15) and itself.top1_agreement.estimate == 1.0
    assert (itself.prompts, itself.positions, itself.shared_mass) == (8, 16, pytest.approx(0.9 * 0.5 + 0.45))
    # Half the prompts disagree at one of their two positions: agreement 75%, and a KL only there.
    other = [
        [_lp({"a": 0.6, "b": 0.3}), _lp({"c": 0.9})]
        if i % 2
        else [_lp({"a": 0.3, "b": 0.6}), _lp({"c": 0.9})]
        for i in range(8)
    ]
    found = fidelity(same, other, top_k=2)
    flipped = 0.6 * math.log(0.6 / 0.3) + 0.3 * math.log(0.3 / 0.6)
    assert found.mean_kl.estimate == pytest.approx(flipped / 4)
    assert found.top1_agreement.estimate == pytest.approx(0.75)
    assert (
        found.top1_agreement.low is not None and found.top1_agreement.low < 0.75 < found.top1_agreement.high
    )
    assert "over prompts" in found.mean_kl.method and "positions as independent" in found.p99_kl.method
    assert found.words().startswith("top-2 KL mean ")
    with pytest.raises(ValueError, match="8 reference prompts against 7"):
        fidelity(same, other[:7], top_k=2)
