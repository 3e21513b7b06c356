"""Whether two points differ beyond run-to-run noise: the coefficient of variation over a point's repeats,
and the change of a metric between two points (the version deltas, the prefix-caching pairs) tested by
`accelbench.core.changes` from the requests of each point's repeats (`accelbench.report.samples`), or from
the repeats alone where a point has no request samples (imported runs, older lakes), judged together with
the false discovery rate controlled across the whole table or gate."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from accelbench.core.changes import (
    CONFIDENCE,
    FDR,
    MIN_EFFECT,
    Change,
    Spread,
    fdr_verdicts,
    quantile_change,
    repeat_spread,
    repeats_change,
    spread_change,
)
from accelbench.core.intervals import Interval
from accelbench.report.model import MetricChange
from accelbench.report.samples import Samples

# The percentiles a change is tested on from request samples: metric -> (samples' metric, quantile).
QUANTILES = {
    "p99_ttft_ms": ("ttft", 0.99),
    "p50_ttft_ms": ("ttft", 0.5),
    "p99_tpot_ms": ("tpot", 0.99),
    "p50_tpot_ms": ("tpot", 0.5),
    "p99_e2el_ms": ("e2el", 0.99),
}
# How a finding names a metric.
NAMES = {
    "output_throughput": "output tokens/s",
    "p99_ttft_ms": "p99 TTFT",
    "p50_ttft_ms": "p50 TTFT",
    "p99_tpot_ms": "p99 TPOT",
    "p50_tpot_ms": "p50 TPOT",
    "p99_e2el_ms": "p99 E2EL",
}


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation over mean; None with fewer than two repeats (nothing to compare)."""
    if len(values) < 2 or not statistics.fmean(values):
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def noise_words() -> dict[str, str]:
    """The test's figures as a section of the page writes them: "5%", "0.05", "95%"."""
    return {"min_effect": f"{MIN_EFFECT:.0%}", "fdr": f"{FDR:g}", "confidence": f"{CONFIDENCE:.0%}"}


def noise_variables(rows: Sequence[Any]) -> Mapping[str, Any]:
    """A judged table's section variables (`Section.variables`): the test's figures in words."""
    return noise_words()


def server_of(run_id: str) -> str:
    """The server a run measured on: its spec id ("<campaign>/<spec>/<level>-r<k>"; a server per spec)."""
    parts = run_id.rsplit("/", 2)
    return parts[-2] if len(parts) >= 2 else run_id


def point_change(
    metric: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    worse_when: int,
    runs: Mapping[str, Mapping[str, Any]],
    samples: Samples,
    by_server: bool = False,
    peers: Sequence[Mapping[str, Any]] = (),
) -> Change:
    """The change of `metric` from point `before` to point `after` (each with `run_ids`, its repeats):
    from the request samples of every repeat of both when `metric` is a percentile and they are there,
    else from the repeats' own figures in `runs` (run_id -> row).

    `by_server` (an A/B comparison, whose sides are servers one after another on one host): with two
    servers or more a side (rounds), the test is over servers, each the geometric mean of its repeats'
    figures: a server's repeats share its host's state, so repeats are no independent draws of the host's
    drift between servers, which an A/A pair on a shared host showed (one round: +89% throughput flagged).
    The servers' spread is pooled over both sides and the comparison's other variants at the same level
    (`peers`, points like `before`: `_server_change`). With one server a side the
    repeats' test stands, and its method says what it leaves out."""
    ids = [list(p.get("run_ids") or []) for p in (before, after)]
    if by_server:
        servers = [sorted({server_of(r) for r in side}) for side in ids]
        if all(len(s) >= 2 for s in servers):
            others = [list(p.get("run_ids") or []) for p in peers]
            return _server_change(metric, ids, others, worse_when, runs, samples)
        change = _repeats_or_samples(metric, ids, worse_when, runs, samples)
        return replace(change, method=f"{change.method}; one server a side: drift between servers not in it")
    return _repeats_or_samples(metric, ids, worse_when, runs, samples)


def _server_change(
    metric: str,
    ids: list[list[str]],
    peers: list[list[str]],
    worse_when: int,
    runs: Mapping[str, Mapping[str, Any]],
    samples: Samples,
) -> Change:
    """The t test over each side's servers, a server's figure the geometric mean of its repeats', against
    the servers' spread pooled over both sides and the `peers` (the comparison's other variants at the
    level): a one-way layout's error term, servers - variants df. Two servers a side alone give 2 df (t =
    4.3), which on CI's shared host left a 7x TTFT slowdown undecided; three variants' six servers give 3.
    Pooling with `PRIOR_SPREAD` as well was tried and dropped: its false alarms grow past 5% once the
    servers' spread exceeds the prior's (benchmarks/ab_server_test.py, RESULTS.md)."""
    sides = [_server_values(metric, side, runs, samples) for side in ids]
    others = [_server_values(metric, peer, runs, samples) for peer in peers]
    spread = repeat_spread([*sides, *others]) or Spread()
    change = spread_change(sides[0], sides[1], spread, worse_when=worse_when)
    servers = sum(map(len, (*sides, *others)))
    pooled = f", spread pooled over {servers} servers of {2 + len(others)} variants" if others else ""
    method = (
        f"t test over servers, {len(sides[0])} + {len(sides[1])} (each the geometric mean of its repeats)"
        f"{pooled}: {spread.df} df"
    )
    return replace(change, method=method)


def _server_values(
    metric: str, run_ids: Sequence[str], runs: Mapping[str, Mapping[str, Any]], samples: Samples
) -> list[float]:
    """Each server's figure: the geometric mean of its repeats' (`_repeat_value`), in server order."""
    by_server: dict[str, list[float]] = {}
    for run_id in run_ids:
        value = _repeat_value(metric, run_id, runs, samples)
        if value is not None and value > 0:
            by_server.setdefault(server_of(run_id), []).append(math.log(value))
    return [math.exp(statistics.fmean(logs)) for logs in by_server.values()]


def _repeat_value(
    metric: str, run_id: str, runs: Mapping[str, Mapping[str, Any]], samples: Samples
) -> float | None:
    """One repeat's figure: its percentile from its requests where there are some, else its row's."""
    if metric in QUANTILES:
        name, q = QUANTILES[metric]
        for group in samples.groups([run_id], name):  # one distribution, or none without samples
            return group.quantile(q, "median_unbiased")  # the lake's stored percentile (core.sketches)
    value = runs.get(run_id, {}).get(metric)
    return float(value) if value is not None else None


def _repeats_or_samples(
    metric: str,
    ids: list[list[str]],
    worse_when: int,
    runs: Mapping[str, Mapping[str, Any]],
    samples: Samples,
) -> Change:
    if metric in QUANTILES:
        name, q = QUANTILES[metric]
        groups = [samples.groups(i, name) for i in ids]
        if all(g and len(g) == len(i) for g, i in zip(groups, ids, strict=True)):
            return quantile_change(groups[0], groups[1], q, worse_when=worse_when)
    values = [[runs[r][metric] for r in i if r in runs and runs[r].get(metric) is not None] for i in ids]
    change = repeats_change(values[0], values[1], worse_when=worse_when)
    if metric in QUANTILES:
        return replace(change, method=f"no request samples, repeats only: {change.method}")
    return change


@dataclass(frozen=True, slots=True)
class TestedChanges:
    """The changes of one row's metrics, judged as one family with every other row's (`tested_changes`), and
    how each metric was tested (`method`: "output tokens/s: t test ...; p99 TTFT: ...")."""

    changes: dict[str, MetricChange]
    method: str


def tested_changes(
    compared: Sequence[tuple[str | None, Mapping[str, Change]]], fdr: float = FDR
) -> list[TestedChanges]:
    """Per row (the drift of a side's host, if any; its changes by metric), its metrics' changes judged as
    one family (Benjamini-Hochberg across every row and metric): the change with its interval, the q-value,
    the verdict ("regression", "improvement", "no change", "undecided") and the finding in words. A row
    whose host drifted (a side's host drifted under its run, `accelbench.core.drift`) is undecided on every
    metric, its finding saying why."""
    flat = [c for _, changes in compared for c in changes.values()]
    done = iter(fdr_verdicts(flat, fdr))
    out = []
    for drift, changes in compared:
        methods: dict[str, list[str]] = {}
        found: dict[str, MetricChange] = {}
        for metric in changes:
            c = next(done)
            methods.setdefault(c.method, []).append(NAMES.get(metric, metric))
            verdict, finding = c.verdict, c.words(NAMES.get(metric, metric))
            if drift:  # a side's host drifted under its run: its figures are not the server's
                verdict, finding = "undecided", f"{finding}; undecided: {drift}"
            change = Interval(c.estimate, c.low, c.high, CONFIDENCE, c.method)
            found[metric] = MetricChange(change, c.q, verdict, finding)
        out.append(
            TestedChanges(found, "; ".join(f"{', '.join(names)}: {m}" for m, names in methods.items()))
        )
    return out


@dataclass(frozen=True, slots=True)
class Sides:
    """Two points compared: `before` and `after` (each a mapping with `run_ids`, its repeats), and the drift
    of a side's host, if any (every metric of the pair undecided then)."""

    before: Mapping[str, Any]
    after: Mapping[str, Any]
    drift: str | None = None
    by_server: bool = False  # an A/B pair: tested over servers where each side has two or more
    peers: tuple[Mapping[str, Any], ...] = ()  # an A/B pair's other variants: their servers' spread pooled


def compare_pairs(
    pairs: Sequence[Sides],
    judged: Sequence[tuple[str, int]],
    runs: Iterable[Mapping[str, Any]] = (),
    samples: Samples = Samples.EMPTY,
    fdr: float = FDR,
) -> list[TestedChanges]:
    """The one comparison of two points every judged table and gate uses (the version deltas and the
    regression gate, the A/B comparisons, the prefix-caching pairs): per pair, each judged metric (name,
    the sign of a worse change: +1 a latency, -1 a throughput) tested from the request samples of both
    points' repeats, else from the repeats in `runs` (`point_change`), and all of them judged as one family
    (`tested_changes`: Benjamini-Hochberg across every pair and metric, each change's interval, verdict and
    what it resolves)."""
    by_id = runs_by_id(runs)
    compared = [
        (
            pair.drift,
            {
                m: point_change(m, pair.before, pair.after, worse, by_id, samples, pair.by_server, pair.peers)
                for m, worse in judged
            },
        )
        for pair in pairs
    ]
    return tested_changes(compared, fdr)


def runs_by_id(runs: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {r["run_id"]: r for r in runs}
