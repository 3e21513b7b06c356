"""The drift rule (accelbench.core.drift) on simulated runs of known speed: a steady host is almost never
called drifted, one 3x slower at the end mostly is and 4x almost always, and the text names both figures.
(Measured at these seeds: 0.0% at 1x, 0.7% at 1.5x, 77% at 3x, 98% at 4x; the 2x margin trades the
power to see a 3x slowdown in one short level for almost no false alarms on a noisy host.)"""

from __future__ import annotations

import numpy as np
from accelbench.core.drift import DRIFT_FACTOR, apart, drift
from accelbench.core.intervals import Interval

SIMULATIONS = 1000
REQUESTS = 40  # a short level: the e2e test's


def _run(rng: np.random.Generator, speed: float) -> np.ndarray:
    """One repeat's TTFTs: a lognormal spread of requests (sigma 0.3) around 20 ms, times the host's speed
    for this run and a run-to-run wobble (sigma 0.15: two runs of a quiet host differ by ~20%)."""
    wobble = rng.lognormal(0.0, 0.15)
    return 20.0 * speed * wobble * rng.lognormal(0.0, 0.3, REQUESTS)


def _alarm_rate(slower: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    found = [drift("TTFT", "1 concurrent", [_run(rng, 1.0)], [_run(rng, slower)]) for _ in range(SIMULATIONS)]
    return sum(f is not None for f in found) / SIMULATIONS


def test_a_steady_host_is_almost_never_drifted_and_a_much_slower_one_mostly_is() -> None:
    assert _alarm_rate(1.0, seed=1) <= 0.01
    assert _alarm_rate(1.5, seed=2) <= 0.02  # a change the 2x margin is there to let pass
    assert _alarm_rate(3.0, seed=3) >= 0.7
    assert _alarm_rate(4.0, seed=5) >= 0.95


def test_the_text_names_the_quantile_the_load_and_both_figures() -> None:
    rng = np.random.default_rng(4)
    before, after = (
        [np.full(REQUESTS, 20.0) + rng.random(REQUESTS)],
        [np.full(REQUESTS, 60.0) + rng.random(REQUESTS)],
    )
    found = drift("TTFT", "4 concurrent", before, after)
    assert found is not None and found.startswith("the host drifted: p50 TTFT at 4 concurrent was 21 ms [")
    assert "] at the start, 61 ms [" in found and found.endswith("] at the end")
    assert drift("TTFT", "4 concurrent", after, before) is not None  # faster at the end is a drift too
    assert drift("TTFT", "4 concurrent", before, before) is None


def test_apart_needs_both_bounds_beyond_the_factor() -> None:
    start = Interval(20.0, 19.0, 21.0, 0.95, "")
    assert apart(start, Interval(60.0, 43.0, 70.0, 0.95, "")) and apart(
        Interval(60.0, 43.0, 70.0, 0.95, ""), start
    )
    assert not apart(start, Interval(60.0, 41.0, 70.0, 0.95, ""))  # 41 < 2 x 21
    assert not apart(start, Interval(60.0, None, 70.0, 0.95, ""))  # an unknown low bound decides nothing
    assert DRIFT_FACTOR == 2.0
