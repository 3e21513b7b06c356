"""Whether a metric changed between two points (two vLLM versions, prefix caching off and on): a test of
the relative change from the repeats and, for a latency percentile, the requests of each repeat, with the
false discovery rate controlled across every comparison of one gate (Benjamini-Hochberg).

Method (chosen by simulation, benchmarks/gate_false_alarms.py, figures in benchmarks/RESULTS.md): each
repeat gives one value, its percentile of its own requests (or its throughput), compared on a log scale,
so the change is relative (the ratio of geometric means). The two points' repeats are compared with a
pooled two-sample t test (Student t on repeats - 2 degrees of freedom): a repeat's percentile carries
both its requests' sampling noise and its host's, so their spread measures both; on simulated A/A pairs
it held 5.2% at a nominal 5% (13,500 pairs over 27 settings of repeats, host spread and percentile). A
hierarchical bootstrap (repeats, then requests) under-covers once the host varies: 11-29% false alarms
with a 10-25% host spread, because 2-5 repeats cannot show the host-to-host spread it resamples. Taking
each repeat's variance at least its percentile's sampling variance (Maritz-Jarrett) kept every rate under
5% but cut the power by half or more; it is used only where the repeats show no spread (one repeat each),
and then the finding says the host's noise was not measured.

The null hypothesis is "the change is at most the minimum effect" (MIN_EFFECT, 5%): a tiny real change
is never an alarm. A change is a regression (or an improvement) when its Benjamini-Hochberg q-value is
at most the FDR; "no change" when its 95% interval lies within +-MIN_EFFECT; otherwise undecided: no
change beyond +-X%, the smallest change these samples resolve.

scipy is imported by the functions that use it: the report DAG file imports this module at parse time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from accelbench.core.intervals import Sample, as_distribution, sketch_note
from accelbench.core.sketches import Distribution

CONFIDENCE = 0.95
MIN_EFFECT = 0.05  # the smallest relative change that is an alarm
FDR = 0.05  # the false discovery rate a gate allows across all its comparisons

ChangeVerdict = Literal["regression", "improvement", "no change", "undecided"]  # a change between two points


@dataclass(frozen=True)
class Change:
    """The relative change after / before - 1 of one metric, its interval at `confidence` and the
    p-value of "|change| <= min_effect"; `q` and `verdict` once `fdr_verdicts` has seen the whole family.
    None figures: nothing to compare (no repeats, no spread to test against); `method` says which."""

    estimate: float | None
    low: float | None
    high: float | None
    p: float | None
    method: str
    worse_when: int = 1  # +1: higher is worse (a latency), -1: lower is worse (a throughput)
    min_effect: float = MIN_EFFECT
    confidence: float = CONFIDENCE
    q: float | None = None
    verdict: ChangeVerdict | None = None

    @property
    def resolves(self) -> float | None:
        """The smallest change these samples resolve: the interval lies within +-resolves."""
        if self.low is None or self.high is None:
            return None
        return max(abs(self.low), abs(self.high))

    def words(self, name: str) -> str:
        """E.g. "p99 TTFT +12% [+6%, +18%], q = 0.003: regression", or "... no change beyond +-7%, the
        smallest these samples resolve"."""
        if self.estimate is None:
            return f"{name}: undecided ({self.method})"
        shown = f"{name} {_percent(self.estimate)}"
        if self.low is not None and self.high is not None:
            shown += f" [{_percent(self.low)}, {_percent(self.high)}]"
        if self.q is not None:
            shown += f", q = {self.q:.2g}"
        if self.verdict in ("regression", "improvement"):
            return f"{shown}: {self.verdict}"
        if self.verdict == "no change":
            return f"{shown}: no change (within +-{self.min_effect:.0%})"
        if self.resolves is None:
            return f"{shown}: undecided ({self.method})"
        return (
            f"{shown}: no change beyond +-{_percent(self.resolves)[1:]}, the smallest these samples resolve"
        )


def _percent(x: float) -> str:
    """Two significant figures at most: +12%, +6%, +3.5%, +0.4%, 0%."""
    if round(x, 3) == 0:
        return "0%"
    return (f"{x:+.0%}" if abs(x) >= 0.095 else f"{x:+.1%}").replace(".0%", "%")


def _within_variance(values: np.ndarray, q: float) -> float:
    """The sampling variance of the log of one repeat's `q` quantile from its requests alone: the
    Maritz-Jarrett standard error (scipy.stats.mstats.mjci), distribution-free; 0 (unknown) from fewer
    than 2 requests."""
    from scipy.stats import mstats

    return float(mstats.mjci(np.log(values), [q])[0]) ** 2 if values.size >= 2 else 0.0


def _test(
    before: np.ndarray,
    after: np.ndarray,
    within: Callable[[], float] | None,
    method: str,
    worse_when: int,
    min_effect: float,
    confidence: float,
) -> Change:
    """The pooled two-sample t test on the log values of the two sides' repeats; where they show no
    spread (one repeat each, or identical figures), a normal interval on `within()`, the requests'
    sampling variance of one repeat's log percentile, when there are requests; else nothing to test."""
    d = float(after.mean() - before.mean())
    df = before.size + after.size - 2
    squares = float(((before - before.mean()) ** 2).sum() + ((after - after.mean()) ** 2).sum())
    variance = squares / df if df and squares else 0.0
    if not variance and within is not None and (floor := within()) > 0:
        variance, df = floor, 0  # a normal interval: the requests' variance is known, not estimated
        method += ", from the requests alone: host-to-host noise not measured"
    elif not df:
        return Change(
            math.expm1(d), None, None, None, f"{method}: no spread to test against", worse_when, min_effect
        )
    se = math.sqrt(variance * (1 / before.size + 1 / after.size))
    return _judged(d, se, df, method, worse_when, min_effect, confidence)


def _judged(
    d: float, se: float, df: int, method: str, worse_when: int, min_effect: float, confidence: float
) -> Change:
    """The change of mean log `d` with standard error `se`: Student t on `df` degrees of freedom (0: a
    normal), its p-value against "|change| <= min_effect" and its interval at `confidence`."""
    from scipy import stats

    dist = stats.t(df) if df else stats.norm()
    bound = math.log1p(min_effect) if d >= 0 else math.log1p(-min_effect)
    if se == 0:  # identical repeats and no requests: nothing to measure noise by
        p, half = (0.0 if abs(d) > abs(bound) else 1.0), 0.0
    else:
        beyond = (d - bound) / se  # >= 0 when beyond the minimum effect on the side of the estimate
        p = min(1.0, 2 * float(dist.sf(beyond if d >= 0 else -beyond)))
        half = float(dist.ppf(0.5 + confidence / 2)) * se
    low, high = math.expm1(d - half), math.expm1(d + half)
    return Change(math.expm1(d), low, high, p, method, worse_when, min_effect, confidence)


def _logs(values: np.ndarray) -> np.ndarray | None:
    return np.log(values) if values.size and bool(np.all(values > 0)) else None


def quantile_change(
    before: Sequence[Sample],
    after: Sequence[Sample],
    q: float,
    *,
    worse_when: int = 1,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
) -> Change:
    """The change of the `q` quantile (0.99: p99) from `before` to `after`: one sample of requests per
    repeat (their values, or their distribution from the lake; groups = repeats) on each side. A sketched
    repeat's quantile is within its relative accuracy (0.1%), which the method says."""
    sides = [[d for d in map(as_distribution, side) if d.count] for side in (before, after)]
    if not all(sides):
        return Change(None, None, None, None, "no request samples on one side", worse_when, min_effect)
    # Each repeat's median-unbiased percentile: the one the lake stores per run (a report reads it alone,
    # issue 50), and the one the repeats' intervals use (`accelbench.core.intervals.repeat_quantiles`).
    values = [np.array([d.quantile(q, "median_unbiased") for d in side]) for side in sides]
    logs = [_logs(v) for v in values]
    if logs[0] is None or logs[1] is None:
        return Change(None, None, None, None, "a percentile of zero", worse_when, min_effect)

    every = [d for side in sides for d in side]

    def within() -> float:
        """The repeats' mean sampling variance of the quantile's log: 0 (none known) where a repeat was
        read as its percentiles alone, which a caller does only for sides of two or more repeats."""
        if not all(d.whole for d in every):
            return 0.0
        return float(np.mean([_within_variance(_sorted_sample(d), q) for d in every]))

    counts = f"{len(sides[0])} + {len(sides[1])} repeats of {min(d.count for d in every)}+ requests"
    note = sketch_note([d for d in every if d.stored(q) is None])  # a stored percentile is exact
    return _test(logs[0], logs[1], within, f"t test, {counts}{note}", worse_when, min_effect, confidence)


def _sorted_sample(dist: Distribution) -> np.ndarray:
    """A repeat's requests in order: its values, or its sketch's bin representatives at every rank."""
    if dist.values is not None:
        return dist.values
    return dist.at_position(np.arange(1, dist.count + 1))


def repeats_change(
    before: Sequence[float],
    after: Sequence[float],
    *,
    worse_when: int = 1,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
) -> Change:
    """The change of a per-repeat figure (a throughput, or a percentile without request samples) from
    the `before` repeats to the `after` ones."""
    a, b = (np.asarray([v for v in side if v is not None], dtype=np.float64) for side in (before, after))
    la, lb = _logs(a), _logs(b)
    if la is None or lb is None:
        return Change(None, None, None, None, "no repeats on one side", worse_when, min_effect)
    return _test(la, lb, None, f"t test, {a.size} + {b.size} repeats", worse_when, min_effect, confidence)


def spread_change(
    before: Sequence[float],
    after: Sequence[float],
    spread: Spread,
    *,
    worse_when: int = 1,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
) -> Change:
    """The change of a per-unit figure (an A/B side's servers) from `before` to `after`, tested against a
    `spread` of one unit's figure measured beyond these two sides as well (the pooled variance of every
    variant's servers and a prior: a one-way layout's error term, moderated as in Smyth 2004), on its
    degrees of freedom."""
    a, b = (np.asarray([v for v in side if v is not None], dtype=np.float64) for side in (before, after))
    la, lb = _logs(a), _logs(b)
    if la is None or lb is None:
        return Change(None, None, None, None, "no figures on one side", worse_when, min_effect)
    if not spread.df:
        return repeats_change(
            before, after, worse_when=worse_when, min_effect=min_effect, confidence=confidence
        )
    d = float(lb.mean() - la.mean())
    se = spread.log_sd * math.sqrt(1 / la.size + 1 / lb.size)
    return _judged(d, se, spread.df, f"t test, {a.size} + {b.size}", worse_when, min_effect, confidence)


def fdr_verdicts(changes: Sequence[Change], fdr: float = FDR) -> list[Change]:
    """Every change of one family (all points x metrics of a gate or a table) with its Benjamini-Hochberg
    q-value (scipy.stats.false_discovery_control) and its verdict."""
    from scipy import stats

    tested = [i for i, c in enumerate(changes) if c.p is not None]
    qs = stats.false_discovery_control([changes[i].p for i in tested]) if tested else []
    q_of = dict(zip(tested, (float(q) for q in qs), strict=True))
    return [_verdict(replace(c, q=q_of.get(i)), fdr) for i, c in enumerate(changes)]


def _verdict(change: Change, fdr: float) -> Change:
    c = change
    if c.estimate is None or c.q is None:
        verdict: ChangeVerdict = "undecided"
    elif c.q <= fdr:
        verdict = "regression" if c.estimate * c.worse_when > 0 else "improvement"
    elif c.resolves is not None and c.resolves <= c.min_effect:
        verdict = "no change"
    else:
        verdict = "undecided"
    return replace(c, verdict=verdict)


# ---- how much to measure: what change a point's repeats can resolve ----------------------------------------

MOST_REPEATS = 50  # repeats_to_resolve looks no further


@dataclass(frozen=True)
class Spread:
    """How much one figure (a percentile, a throughput) moves between repeats of one point on one host: the
    pooled standard deviation of its log within groups of repeats (each group measured together, one point
    of one campaign: the spread the gate's test sees on each side), on `df` degrees of freedom."""

    log_sd: float = 0.0
    df: int = 0  # 0: none measured
    repeats: int = 0  # all the repeats (or runs) it comes from
    metric: str | None = None  # the figure it is of ("p99 E2E latency"), where the caller names it

    @property
    def relative(self) -> float:
        """One repeat's typical deviation, as a fraction of the figure: exp(sd) - 1."""
        return math.expm1(self.log_sd)

    def pooled(self, others: Sequence[Spread]) -> Spread:
        """Pooled with `others` of the same figure: variances weighted by their degrees of freedom (as a
        one-way analysis of variance pools its groups), the degrees of freedom and repeats added."""
        spreads = [s for s in (self, *others) if s.df > 0]
        df = sum(s.df for s in spreads)
        if not df:
            return Spread(metric=self.metric)
        sd = math.sqrt(sum(s.df * s.log_sd**2 for s in spreads) / df)
        return Spread(sd, df, sum(s.repeats for s in spreads), self.metric)

    def quantile(self, confidence: float = CONFIDENCE) -> float:
        """The half-width on the log scale of one figure's deviation at `confidence`: Student t with the
        spread's degrees of freedom x sd (a sd from 1 pair is itself a rough guess: t = 12.7 where a normal
        says 1.96); 0 without a spread."""
        from accelbench.core.intervals import t_quantile

        return t_quantile(confidence, self.df) * self.log_sd if self.df > 0 and self.log_sd > 0 else 0.0

    def text(self) -> str:
        """ "p99 E2E latency 16% (3 df)" """
        return f"{self.metric or 'latency'} {self.relative:.0%} ({self.df} df)"


# The host's run-to-run spread of one run's figure (log sd) before a search, an A/B comparison or the lake
# has measured any: issue 48's four p99 E2EL of one load on the 2-vCPU host, four searches' servers (284,
# 295, 377, 313 ms: log sd 0.126 on 3 degrees of freedom, each run's own sampling noise included, so it errs
# wide), pooled as 3 df of data (a scaled inverse chi-square prior): a search's own runs of one load measured
# twice, a comparison's servers and the lake's earlier runs outweigh it after a few. Without it a search's
# first looks would judge a p99 by its requests alone (the host's 20-40% swings unseen), its one recheck pair
# (1 df: t = 12.7) would stretch the interval to nothing, and an A/B pair of two servers a side would test
# on 2 df (t = 4.3).
PRIOR_SPREAD = Spread(0.126, 3, 4, "p99 (prior: issue 48's runs on a 2-vCPU host)")


def repeat_spread(groups: Sequence[Sequence[float | None]]) -> Spread | None:
    """The spread of a per-repeat figure from groups of repeats (a group: the repeats of one point in one
    campaign); None when no group has two positive figures (one repeat shows no spread)."""
    squares, df, repeats = 0.0, 0, 0
    for group in groups:
        logs = _logs(np.asarray([v for v in group if v is not None], dtype=np.float64))
        if logs is None or logs.size < 2:
            continue
        squares += float(((logs - logs.mean()) ** 2).sum())
        df += logs.size - 1
        repeats += logs.size
    return Spread(math.sqrt(squares / df), df, repeats) if df else None


def resolvable(spread: Spread, repeats: int, confidence: float = CONFIDENCE) -> float | None:
    """The smallest relative change the gate's test resolves between two points of `repeats` repeats each
    on a host with this spread: the half-width of the change's interval, t(2r - 2) x sd x sqrt(2 / r) on
    the log scale, as its larger relative side. Below it a change "cannot be told from noise"; a change is
    an alarm only beyond the minimum effect as well. None below 2 repeats (the test has no spread of its
    own then)."""
    from accelbench.core.intervals import t_quantile

    if repeats < 2:
        return None
    half = t_quantile(confidence, 2 * repeats - 2) * spread.log_sd * math.sqrt(2 / repeats)
    return math.expm1(half)


def repeats_to_resolve(spread: Spread, change: float, confidence: float = CONFIDENCE) -> int | None:
    """The fewest repeats per point at which `resolvable` is at most `change` (0.10: +-10%); None beyond
    MOST_REPEATS."""
    for repeats in range(2, MOST_REPEATS + 1):
        resolves = resolvable(spread, repeats, confidence)
        if resolves is not None and resolves <= change:
            return repeats
    return None


def _plus_minus(x: float) -> str:
    """ "±15%", "±9.4%": `_percent`'s figures, for a bound on both sides."""
    return "±" + _percent(abs(x)).lstrip("+")


def resolution_words(
    name: str, spread: Spread, repeats: int, requests: int | None, target: float = 0.10
) -> str:
    """ "with 2 repeats of 200 requests, p99 TTFT changes under ±15% cannot be told from noise on this host;
    ±10% takes 4 repeats": what `repeats` resolve on a host with this spread, and what would resolve
    `target`. One repeat: how far the figure moves between repeats instead."""
    resolves = resolvable(spread, repeats)
    of = f" of {requests:,} requests" if requests else ""
    said = (
        f"with {repeats} repeats{of}, {name} changes under {_plus_minus(resolves)} cannot be told from noise "
        "on this host"
        if resolves is not None
        else f"with 1 repeat{of}, no change can be tested ({name} moves {_plus_minus(spread.relative)} "
        "between repeats on this host)"
    )
    needed = repeats_to_resolve(spread, target)
    more = f"{needed} repeats" if needed is not None else f"more than {MOST_REPEATS} repeats"
    return f"{said}; {_plus_minus(target)} takes {more}"
