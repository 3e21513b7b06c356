"""The regression gate's test (accelbench.core.changes) on simulated points: its A/A false-alarm rate stays
at or under the nominal level, an A/B +20% change is found, the minimum effect is respected, and the false
discovery rate is controlled across a matrix (Benjamini-Hochberg). All seeded."""

from __future__ import annotations

import numpy as np
import pytest
from accelbench.core.changes import FDR, Change, fdr_verdicts, quantile_change, repeats_change
from scipy import stats


def _point(
    rng: np.random.Generator, repeats: int, requests: int, host_sd: float, sd: float, factor: float = 1.0
):
    """(requests per repeat, throughput per repeat) of a simulated point: lognormal latencies (median
    100 ms, log sd `sd`) times each repeat's host factor exp(N(0, host_sd)), times `factor`."""
    hosts = np.exp(rng.normal(0, host_sd, repeats)) * factor
    return [h * 100 * np.exp(rng.normal(0, sd, requests)) for h in hosts], [1000 / h for h in hosts]


def _flagged(c: Change) -> bool:
    return c.verdict in ("regression", "improvement")


@pytest.mark.parametrize(("repeats", "host_sd"), [(2, 0.03), (3, 0.10)])
def test_a_a_false_alarms_of_one_comparison_are_at_most_the_nominal_rate(
    repeats: int, host_sd: float
) -> None:
    """The test itself (no minimum effect): two points drawn alike, with host noise between repeats, are
    flagged at most 5% of the time (plus two binomial standard errors of 1000 simulations)."""
    rng = np.random.default_rng(repeats)
    alarms = {"p99": 0, "p50": 0, "throughput": 0}
    sims = 1000
    for _ in range(sims):
        (ga, ta), (gb, tb) = (_point(rng, repeats, 200, host_sd, 0.5) for _ in range(2))
        for name, change in (
            ("p99", quantile_change(ga, gb, 0.99, min_effect=0.0)),
            ("p50", quantile_change(ga, gb, 0.5, min_effect=0.0)),
            ("throughput", repeats_change(ta, tb, worse_when=-1, min_effect=0.0)),
        ):
            alarms[name] += _flagged(fdr_verdicts([change])[0])
    slack = 2 * np.sqrt(0.05 * 0.95 / sims)
    assert all(a / sims <= 0.05 + slack for a in alarms.values()), alarms


def test_a_a_matrices_gated_together_flag_nothing_at_the_default_fdr() -> None:
    """200 A/A matrices of 12 points x 3 metrics, gated as the version gate gates (minimum effect 5%, BH
    at FDR 5%): under the complete null the FDR is the chance of any flag, at most 5%."""
    rng = np.random.default_rng(11)
    matrices, any_flag = 200, 0
    for _ in range(matrices):
        changes = []
        for _ in range(12):
            (ga, ta), (gb, tb) = (_point(rng, 2, 200, 0.05, 0.5) for _ in range(2))
            changes += [
                quantile_change(ga, gb, 0.99),
                quantile_change(ga, gb, 0.5),
                repeats_change(ta, tb, worse_when=-1),
            ]
        any_flag += any(_flagged(c) for c in fdr_verdicts(changes))
    assert any_flag / matrices <= FDR, any_flag


def test_an_a_b_slowdown_of_20_percent_is_found_with_its_interval() -> None:
    """Every latency 20% longer (every throughput 1/1.2), 3 repeats of 1000 requests with a 2% host
    spread: found as a regression nearly always, and its interval holds the true change."""
    rng = np.random.default_rng(5)
    sims, found, held = 50, {"p99": 0, "p50": 0, "throughput": 0}, 0
    for _ in range(sims):
        (ga, ta), (gb, tb) = _point(rng, 3, 1000, 0.02, 0.25), _point(rng, 3, 1000, 0.02, 0.25, 1.2)
        changes = fdr_verdicts(
            [
                quantile_change(ga, gb, 0.99),
                quantile_change(ga, gb, 0.5),
                repeats_change(ta, tb, worse_when=-1),
            ]
        )
        for name, c, truth in zip(found, changes, (0.2, 0.2, 1 / 1.2 - 1), strict=True):
            found[name] += c.verdict == "regression"
            assert c.verdict != "improvement", c
            held += c.low is not None and c.high is not None and c.low <= truth <= c.high
    assert found["p50"] == found["throughput"] == sims and found["p99"] >= 0.8 * sims, found
    assert held >= 0.93 * 3 * sims, held  # 95% intervals
    # Faster is an improvement: the sign of worse_when decides.
    assert (
        fdr_verdicts([repeats_change([100.0, 101.0], [130.0, 131.0], worse_when=-1)])[0].verdict
        == "improvement"
    )


def test_a_real_change_under_the_minimum_effect_is_never_an_alarm() -> None:
    """+3% measured very precisely (20 repeats of 2000 requests, no host noise) is a real change, but
    under the 5% minimum: "no change"; +10% as precisely is a regression."""
    rng = np.random.default_rng(3)
    base = [100 * np.exp(rng.normal(0, 0.2, 2000)) for _ in range(20)]
    small = fdr_verdicts([quantile_change(base, [g * 1.03 for g in base], 0.5)])[0]
    assert small.estimate == pytest.approx(0.03) and small.p == pytest.approx(1.0)
    assert small.verdict == "no change" and small.words("p50 TTFT").endswith("no change (within +-5%)")
    big = fdr_verdicts([quantile_change(base, [g * 1.10 for g in base], 0.5)])[0]
    assert big.verdict == "regression" and big.p is not None and big.p < 1e-6
    # With no minimum effect, the same +3% is a regression: the minimum effect is what spares it.
    assert (
        fdr_verdicts([quantile_change(base, [g * 1.03 for g in base], 0.5, min_effect=0.0)])[0].verdict
        == "regression"
    )


def test_benjamini_hochberg_is_applied_across_the_matrix() -> None:
    """One comparison with p = 0.01 is a regression alone, but not among 19 clean ones (q = 0.2); ten of
    them are (q = 0.02). The q-values are scipy's."""
    hit = Change(0.12, 0.06, 0.18, 0.01, "t test")
    clean = Change(0.0, -0.03, 0.03, 1.0, "t test")
    assert fdr_verdicts([hit])[0].verdict == "regression"
    alone_among_clean = fdr_verdicts([hit, *[clean] * 19])
    assert alone_among_clean[0].q == pytest.approx(0.2) and alone_among_clean[0].verdict == "undecided"
    assert {c.verdict for c in alone_among_clean[1:]} == {"no change"}
    many = fdr_verdicts([hit] * 10 + [clean] * 10)
    expected = stats.false_discovery_control([0.01] * 10 + [1.0] * 10)
    assert [c.q for c in many] == pytest.approx(list(expected))
    assert [c.verdict for c in many] == ["regression"] * 10 + ["no change"] * 10


def test_the_findings_say_the_interval_the_q_value_and_what_is_undecided() -> None:
    found = fdr_verdicts([Change(0.12, 0.06, 0.18, 0.003, "t test")])[0]
    assert found.words("p99 TTFT") == "p99 TTFT +12% [+6%, +18%], q = 0.003: regression"
    wide = fdr_verdicts([Change(0.02, -0.05, 0.07, 0.9, "t test")])[0]
    assert wide.verdict == "undecided" and wide.resolves == pytest.approx(0.07)
    assert wide.words("p99 TTFT").endswith("no change beyond +-7%, the smallest these samples resolve")


def test_one_repeat_each_tests_requests_only_and_says_so() -> None:
    rng = np.random.default_rng(2)
    a, b = [100 * np.exp(rng.normal(0, 0.2, 500))], [130 * np.exp(rng.normal(0, 0.2, 500))]
    latency = fdr_verdicts([quantile_change(a, b, 0.5)])[0]
    assert latency.verdict == "regression"
    assert "from the requests alone: host-to-host noise not measured" in latency.method
    throughput = fdr_verdicts([repeats_change([100.0], [50.0], worse_when=-1)])[0]
    assert (
        throughput.verdict == "undecided"
        and throughput.p is None
        and "no spread to test against" in throughput.method
    )
    nothing = fdr_verdicts([quantile_change([], b, 0.5)])[0]
    assert nothing.verdict == "undecided" and nothing.estimate is None
