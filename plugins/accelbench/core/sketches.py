"""One run's latencies of one metric as a distribution that merges and stays small: its values where they
are few, a DDSketch beyond (issue 50: a year of scheduled campaigns holds 10^8 requests and more, and a
report that read them all would grow with them).

The sketch is DataDog's DDSketch (the `ddsketch` package): values fall into logarithmic bins whose
representative is within a relative `RELATIVE_ACCURACY` of every value in the bin, so a bin's count and its
key say where each of its values lies: in (v / (1 + a), v / (1 - a)] around the representative v. The
library's `LogarithmicMapping` maps values to keys and keys to values here; the counts are kept as a dense
NumPy array (offset and counts, as the library's DenseStore keeps them) so that a run of 10^5 requests
is binned in one vectorised pass and sketches merge by adding arrays (the library adds one value, and
merges stores, in Python loops). `to_ddsketch` gives the library's own object, e.g. for its protobuf.

Every order-statistic figure the report computes (numpy's linear quantile, the median-unbiased one, the
fractional order statistics of an interval) is a value at a fractional 1-based position of the sorted
sample (`at_position`): exact from the values, or from the bin holding that rank; `low` and `high` give
the ends of that bin, so an interval's bounds built from them hold the exact path's bounds whatever the
values inside a bin were (the widening by the sketch's stated error, and no more).

A run keeps its values while they are no more than its sketch's bins (`Distribution.of`): below that
size the sketch would cost as much and lose the values.

A distribution may also be read as its `percentiles` alone (`Distribution.summary`): the run's exact
median-unbiased p50/p90/p95/p99, computed from its values at ingest and stored beside the sketch. That is all
a percentile of two or more repeats needs (their spread is the interval: `accelbench.core.intervals`), and
what lets a report read a few numbers per run, not a sketch's bins (issue 50); anything else asked of a
summary is refused by name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # imported where used: DAG files import accelbench.core (accelbench.core.intervals)
    from ddsketch import DDSketch
    from ddsketch.mapping import LogarithmicMapping

RELATIVE_ACCURACY = 0.001  # a bin's values within 0.1% of its representative: 1,151 bins a decade
Side = Literal["estimate", "low", "high"]


@cache
def mapping(relative_accuracy: float = RELATIVE_ACCURACY) -> LogarithmicMapping:
    """The library's value <-> key mapping at `relative_accuracy`."""
    from ddsketch.mapping import LogarithmicMapping

    return LogarithmicMapping(relative_accuracy)


def keys_of(values: NDArray[np.float64], relative_accuracy: float = RELATIVE_ACCURACY) -> NDArray[np.int64]:
    """`LogarithmicMapping.key` over an array: ceil(log2(v) x multiplier) + offset, as the library computes
    it one value at a time (tests/unit/test_sketches.py checks they agree)."""
    m = mapping(relative_accuracy)
    keys: NDArray[np.int64] = (np.ceil(np.log2(values) * m._multiplier) + m._offset).astype(np.int64)
    return keys


class SummaryOnly(ValueError):
    """Something asked of a distribution read as its percentiles alone that only its values or bins know."""


@dataclass(frozen=True, eq=False)
class Distribution:
    """`count` latencies (milliseconds, > 0; zeros counted apart): sorted `values` where kept exactly,
    else the sketch's `bins` (counts of the keys `offset`, `offset` + 1, ...)."""

    count: int
    values: NDArray[np.float64] | None = None
    offset: int = 0
    bins: NDArray[np.int64] | None = None
    zero_count: int = 0
    relative_accuracy: float | None = None  # None: exact
    total: float = 0.0  # the values' sum (exact either way)
    low: float = math.nan  # the smallest and largest value (exact either way)
    high: float = math.nan
    percentiles: Mapping[float, float] | None = None  # exact median-unbiased quantiles, by q (the lake's)

    @property
    def exact(self) -> bool:
        return self.values is not None

    @property
    def whole(self) -> bool:
        """Its values or its sketch are here, not only its `percentiles`."""
        return self.values is not None or self.bins is not None or self.count == 0

    @classmethod
    def summary(
        cls,
        count: int,
        percentiles: Mapping[float, float],
        *,
        zero_count: int = 0,
        total: float = 0.0,
        low: float = math.nan,
        high: float = math.nan,
    ) -> Distribution:
        """A run's distribution known by its exact median-unbiased `percentiles` alone (see the module)."""
        return cls(
            count, None, zero_count=zero_count, total=total, low=low, high=high, percentiles=percentiles
        )

    def stored(self, q: float) -> float | None:
        """The exact median-unbiased q-quantile stored with it (`percentiles`), or None."""
        for known, value in (self.percentiles or {}).items():
            if abs(known - q) < 1e-12:
                return value
        return None

    def _require_whole(self, asked: str) -> None:
        if not self.whole:
            known = ", ".join(f"p{round(q * 100)}" for q in sorted(self.percentiles or {}))
            raise SummaryOnly(
                f"{asked} of a distribution read as its percentiles alone ({known}): read its values, or bins"
            )

    @classmethod
    def of(cls, values: ArrayLike, relative_accuracy: float = RELATIVE_ACCURACY) -> Distribution:
        """The finite values of `values` (NaN and infinities dropped: a metric a request did not measure),
        kept exactly when the sketch would need as many bins as there are values."""
        x = np.asarray(values, dtype=np.float64).ravel()
        x = np.sort(x[np.isfinite(x)])
        if x.size and x[0] < 0:
            raise ValueError(f"a latency below 0 ({x[0]}): a distribution of latencies holds none")
        if x.size == 0:
            return cls(0, x)
        total, low, high = float(x.sum()), float(x[0]), float(x[-1])
        positive = x[x > 0]
        zeros = int(x.size - positive.size)
        keys = keys_of(positive, relative_accuracy) if positive.size else np.zeros(0, np.int64)
        if not keys.size or keys[-1] - keys[0] + 1 >= x.size:
            return cls(int(x.size), x, zero_count=zeros, total=total, low=low, high=high)
        bins = np.bincount(keys - keys[0]).astype(np.int64)
        return cls(int(x.size), None, int(keys[0]), bins, zeros, relative_accuracy, total, low, high)

    @classmethod
    def exact_of(cls, values: ArrayLike) -> Distribution:
        """The finite values of `values`, kept exactly whatever their number (a caller's own sample)."""
        x = np.asarray(values, dtype=np.float64).ravel()
        x = np.sort(x[np.isfinite(x)])
        if x.size == 0:
            return cls(0, x)
        zeros = int(np.count_nonzero(x == 0))
        return cls(int(x.size), x, zero_count=zeros, total=float(x.sum()), low=float(x[0]), high=float(x[-1]))

    def sketched(self, relative_accuracy: float = RELATIVE_ACCURACY) -> Distribution:
        """This distribution as a sketch (itself when it is one already)."""
        self._require_whole("a sketch")
        if self.values is None:
            return self
        positive = self.values[self.values > 0]
        keys = keys_of(positive, relative_accuracy) if positive.size else np.zeros(0, np.int64)
        offset = int(keys[0]) if keys.size else 0
        bins = np.bincount(keys - offset).astype(np.int64) if keys.size else np.zeros(0, np.int64)
        return Distribution(
            self.count,
            None,
            offset,
            bins,
            self.zero_count,
            relative_accuracy,
            self.total,
            self.low,
            self.high,
        )

    def at_position(self, positions: ArrayLike, side: Side = "estimate") -> NDArray[np.float64]:
        """The fractional order statistics at 1-based `positions` (linear between neighbours, clipped to
        [1, count]). From a sketch: the representatives of the bins holding those ranks, or (`side`) their
        lower or upper ends, which hold the exact order statistic."""
        self._require_whole("order statistics")
        p = np.clip(np.asarray(positions, dtype=np.float64), 1, max(self.count, 1))
        below = np.floor(p).astype(np.int64)
        above = np.minimum(below + 1, self.count)
        frac = p - below
        lo, hi = self._at_ranks(below, side), self._at_ranks(above, side)
        result: NDArray[np.float64] = lo * (1 - frac) + hi * frac
        return result

    def _at_ranks(self, ranks: NDArray[np.int64], side: Side) -> NDArray[np.float64]:
        if self.count == 0:
            return np.full(ranks.shape, np.nan)
        if self.values is not None:
            return self.values[ranks - 1]
        assert self.bins is not None and self.relative_accuracy is not None
        m = mapping(self.relative_accuracy)
        within = np.searchsorted(np.cumsum(self.bins), ranks - self.zero_count)  # first bin reaching the rank
        keys = self.offset + within
        representative = 2.0 ** ((keys - m._offset) / m._multiplier) * (2.0 / (1 + m.gamma))  # m.value(keys)
        a = self.relative_accuracy
        edge = {"estimate": 1.0, "low": 1 / (1 + a), "high": 1 / (1 - a)}[side]  # the bin's ends
        values = np.clip(representative * edge, self.low, self.high)
        return np.where(ranks <= self.zero_count, 0.0, values)

    def quantile(
        self, q: float, method: Literal["linear", "median_unbiased"] = "linear", side: Side = "estimate"
    ) -> float:
        """numpy's quantile of the sample by `method` (numpy's own from the values; from a sketch, at the same
        positions numpy interpolates between; a median-unbiased one stored in `percentiles`, exact, first)."""
        n = self.count
        if n == 0:
            return math.nan
        if method == "median_unbiased" and side == "estimate" and (stored := self.stored(q)) is not None:
            return stored
        self._require_whole(f"the {method} q={q} quantile")
        if self.values is not None and side == "estimate":
            return float(np.quantile(self.values, q, method=method))
        position = 1 + (n - 1) * q if method == "linear" else (n + 1 / 3) * q + 1 / 3
        return float(self.at_position(position, side))

    def merged(self, other: Distribution) -> Distribution:
        """The distribution of both runs' values (exact when both are and the result stays small)."""
        self._require_whole("a merge")
        other._require_whole("a merge")
        if self.values is not None and other.values is not None:
            return Distribution.of(np.concatenate([self.values, other.values]))
        accuracy = self.relative_accuracy or other.relative_accuracy or RELATIVE_ACCURACY
        a, b = self.sketched(accuracy), other.sketched(accuracy)
        if a.relative_accuracy != b.relative_accuracy:
            raise ValueError(f"sketches of relative accuracy {a.relative_accuracy} and {b.relative_accuracy}")
        assert a.bins is not None and b.bins is not None
        if not b.bins.size:
            offset, bins = a.offset, a.bins
        elif not a.bins.size:
            offset, bins = b.offset, b.bins
        else:
            offset = min(a.offset, b.offset)
            bins = np.zeros(max(a.offset + a.bins.size, b.offset + b.bins.size) - offset, np.int64)
            bins[a.offset - offset : a.offset - offset + a.bins.size] += a.bins
            bins[b.offset - offset : b.offset - offset + b.bins.size] += b.bins
        return Distribution(
            a.count + b.count,
            None,
            offset,
            bins,
            a.zero_count + b.zero_count,
            accuracy,
            a.total + b.total,
            float(np.nanmin([a.low, b.low])),
            float(np.nanmax([a.high, b.high])),
        )

    def to_ddsketch(self) -> DDSketch:
        """The library's DDSketch of this distribution (its `get_quantile_value`, merge and protobuf): each
        bin's count added at its representative, so its min, max and sum are the bins', not the values'."""
        from ddsketch import DDSketch

        accuracy = self.relative_accuracy or RELATIVE_ACCURACY
        sketched = self.sketched(accuracy)
        sketch = DDSketch(accuracy)
        m = mapping(accuracy)
        assert sketched.bins is not None
        for index in np.flatnonzero(sketched.bins):
            sketch.add(m.value(int(sketched.offset + index)), float(sketched.bins[index]))
        if sketched.zero_count:
            sketch.add(0.0, float(sketched.zero_count))
        return sketch
