"""accelbench.core.sketches against its references: the ddsketch library (keys, quantiles) and numpy's
quantiles and order statistics of the same values (the exact path)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from accelbench.core.intervals import order_ranks
from accelbench.core.sketches import RELATIVE_ACCURACY, Distribution, keys_of, mapping

A = RELATIVE_ACCURACY


def _latencies(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100 * np.exp(rng.normal(0.0, 0.5, n))  # ms, lognormal like a run's TTFTs


def test_keys_are_the_librarys() -> None:
    values = np.concatenate([_latencies(100_000), [1e-3, 0.5, 1.0, 2.0, 1e6]])
    m = mapping()
    expected = np.array([m.key(float(v)) for v in values])
    assert np.array_equal(keys_of(values), expected)


def test_a_small_run_is_kept_exactly_and_gives_numpys_figures() -> None:
    values = _latencies(300)
    dist = Distribution.of(np.concatenate([values, [np.nan]]))  # a request that did not measure it: dropped
    assert dist.exact and dist.count == 300
    for q in (0.5, 0.9, 0.99):
        assert dist.quantile(q) == pytest.approx(np.quantile(values, q), rel=1e-12)
        unbiased = np.quantile(values, q, method="median_unbiased")
        assert dist.quantile(q, "median_unbiased") == pytest.approx(unbiased, rel=1e-12)
    ordered = np.sort(values)
    expected = [ordered[0], ordered[1:3].mean(), ordered[-1]]
    assert dist.at_position([1, 2.5, 300]).tolist() == pytest.approx(expected)


@pytest.mark.parametrize("n", [10_000, 100_000])
def test_a_sketch_holds_every_order_statistic_within_its_bin(n: int) -> None:
    values = _latencies(n, seed=n)
    dist = Distribution.of(values)
    assert not dist.exact and dist.relative_accuracy == A
    assert dist.bins is not None and dist.bins.size < n / 4 and int(dist.bins.sum()) == n
    ordered = np.sort(values)
    ranks = np.arange(1, n + 1)
    low, estimate, high = (dist.at_position(ranks, side) for side in ("low", "estimate", "high"))
    assert np.all(low <= ordered) and np.all(ordered <= high)  # the bin's ends hold the exact value
    assert np.all(np.abs(estimate - ordered) <= A * ordered * (1 + 1e-9))  # the stated relative error
    for q in (0.5, 0.9, 0.99):
        exact = np.quantile(values, q)
        assert abs(dist.quantile(q) - exact) <= A * exact * (1 + 1e-9)
        lo_rank, hi_rank = order_ranks(n, q)
        assert lo_rank is not None and hi_rank is not None
        exact_lo, exact_hi = np.interp([lo_rank, hi_rank], ranks, ordered)
        assert dist.at_position(lo_rank, "low") <= exact_lo and exact_hi <= dist.at_position(hi_rank, "high")


def test_merged_sketches_are_the_sketch_of_both_runs_values() -> None:
    a, b = _latencies(20_000, 1), _latencies(30_000, 2) * 1.5
    merged = Distribution.of(a).merged(Distribution.of(b))
    whole = Distribution.of(np.concatenate([a, b]))
    assert merged.bins is not None and whole.bins is not None
    assert (merged.count, merged.offset, merged.zero_count) == (whole.count, whole.offset, whole.zero_count)
    assert np.array_equal(merged.bins, whole.bins)
    assert (merged.low, merged.high) == (whole.low, whole.high)
    assert merged.total == pytest.approx(whole.total)
    # Two small runs merge exactly; an exact run and a sketch merge as sketches.
    small = Distribution.of(a[:50]).merged(Distribution.of(b[:50]))
    assert small.exact and np.array_equal(small.values, np.sort(np.concatenate([a[:50], b[:50]])))
    mixed = Distribution.of(a[:50]).merged(Distribution.of(b))
    assert not mixed.exact and mixed.count == 30_050


def test_the_librarys_quantiles_of_the_same_sketch_agree() -> None:
    values = _latencies(50_000, 3)
    dist = Distribution.of(values)
    sketch = dist.to_ddsketch()
    assert sketch.count == dist.count
    for q in (0.0, 0.25, 0.5, 0.9, 0.99, 0.999):
        rank = math.floor(q * (dist.count - 1)) + 1  # the library: the lower key at rank q (n - 1), 0-based
        ours = float(dist.at_position(rank))
        assert sketch.get_quantile_value(q) == pytest.approx(ours, rel=1e-12)


def test_zeros_and_nothing() -> None:
    assert Distribution.of([]).count == 0 and math.isnan(Distribution.of([np.nan]).quantile(0.5))
    dist = Distribution.of(np.concatenate([np.zeros(10), _latencies(10_000)]))
    assert dist.zero_count == 10 and not dist.exact
    assert dist.at_position([1, 10, 11]).tolist()[:2] == [0.0, 0.0] and dist.at_position(11) > 0
    with pytest.raises(ValueError, match="below 0"):
        Distribution.of([-1.0, 2.0])


def test_a_summary_gives_its_stored_percentiles_and_refuses_the_rest_by_name() -> None:
    values = _latencies(5_000, seed=3)
    stored = {q: float(np.quantile(values, q, method="median_unbiased")) for q in (0.5, 0.9, 0.95, 0.99)}
    whole = Distribution.of(values)
    summary = Distribution.summary(5_000, stored, total=float(values.sum()))
    assert not summary.whole and whole.whole and summary.count == 5_000
    for q, value in stored.items():
        assert summary.quantile(q, "median_unbiased") == value  # exact, where the sketch is within 0.1%
        assert summary.stored(q) == value and whole.stored(q) is None
        assert abs(whole.quantile(q, "median_unbiased") - value) <= A * value * (1 + 1e-9)
    for refused in (
        lambda: summary.quantile(0.99),  # linear: not stored
        lambda: summary.quantile(0.75, "median_unbiased"),
        lambda: summary.quantile(0.99, "median_unbiased", "high"),
        lambda: summary.at_position([1, 2]),
        lambda: summary.merged(whole),
        lambda: summary.sketched(),
    ):
        with pytest.raises(ValueError, match=r"percentiles alone \(p50, p90, p95, p99\)"):
            refused()
