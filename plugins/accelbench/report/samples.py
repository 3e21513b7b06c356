"""The request samples a report's latency intervals are computed from: per kept run, the distribution of
each latency over its successful requests (`accelbench.core.sketches.Distribution`), so a percentile's
interval can pool the requests of a point's repeats (`accelbench.core.intervals.pooled_quantile_interval`).

`read_samples` reads them from the lake's `sketches` table (issue 50): a few hundred numbers per run, not
one row per request, so a report grows with its runs, not their requests; and for the runs a caller needs
only the percentiles of (`whole` leaves them out: a point of two or more repeats, whose interval is the
spread of their percentiles), those percentiles alone, a dozen numbers a run. A run without a sketches row (a
lake written before schema 16, an import of that time) has its requests read instead, for those runs
alone, a bounded number of runs at a time. The send times of a trace's replays (the trace replays table
plots TTFT against them, request by request) are read from the `requests` table for the runs asked
(`replays`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from accelbench.core.sketches import Distribution
from accelbench.lake.schemas import REQUESTS
from accelbench.lake.sketches import SUMMARY_COLUMNS, distributions
from accelbench.lake.store import Lake
from accelbench.report.keys import POINT_KEY, key_value

# metric -> the requests table's column (seconds); "start": when the request was sent, from the level's first
# (a trace's replay is shown against its arrivals: accelbench.report.tables.traces)
COLUMNS = {"ttft": "ttft_s", "tpot": "tpot_s", "e2el": "e2el_s", "start": "start_offset_s"}
_READ = ["run_id", "request_index", "success", *COLUMNS.values()]
READ_RUNS = 50  # runs per read of the requests table
SUCCEEDED = ds.field("success") == True  # noqa: E712  (a pyarrow expression, not a truth test)


def _milliseconds(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Seconds as milliseconds, NaN where a request did not measure it (e.g. TPOT of one output token)."""
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64) * 1000.0


@dataclass(frozen=True)
class Samples:
    """run_id -> metric ("ttft", "tpot", "e2el") -> the distribution of the repeat's successful requests'
    milliseconds; `sends`: run_id -> (send times from the level's first, TTFTs), milliseconds, request by
    request, for trace replays. A run missing here (an imported result without requests) has no samples."""

    by_run: Mapping[str, Mapping[str, Distribution]] = field(default_factory=dict)
    sends: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    EMPTY: ClassVar[Samples]

    def __post_init__(self) -> None:
        """A caller's own arrays of values (a test's, a benchmark's) kept exactly, as distributions."""
        if any(not isinstance(d, Distribution) for metrics in self.by_run.values() for d in metrics.values()):
            converted = {
                run: {
                    m: d if isinstance(d, Distribution) else Distribution.exact_of(d)
                    for m, d in metrics.items()
                }
                for run, metrics in self.by_run.items()
            }
            object.__setattr__(self, "by_run", converted)

    def groups(self, run_ids: Iterable[str], metric: str) -> list[Distribution]:
        """One distribution per repeat that has samples of `metric`, in the order of `run_ids`."""
        found = (self.by_run.get(r, {}).get(metric) for r in run_ids)
        return [d for d in found if d is not None and d.count]

    def merged(self, other: Samples) -> Samples:
        return Samples({**self.by_run, **other.by_run}, {**self.sends, **other.sends})

    @classmethod
    def from_table(cls, table: pa.Table) -> Samples:
        """From a `requests` table holding at least run_id, success and the metrics' columns (the rows of
        the runs to keep), exactly; sorted by request_index when it has one."""
        if table.num_rows == 0:
            return cls.EMPTY
        if "success" in table.column_names:
            table = table.filter(pc.equal(table["success"], True))
        runs = table["run_id"].combine_chunks().dictionary_encode()
        codes = runs.indices.to_numpy(zero_copy_only=False)
        if "request_index" in table.column_names:  # by run, then request: a stable sort of two int arrays
            order = np.lexsort((table["request_index"].to_numpy(zero_copy_only=False), codes))
        else:
            order = np.argsort(codes, kind="stable")
        codes = codes[order]
        metrics = {m: _milliseconds(table[c])[order] for m, c in COLUMNS.items() if c in table.column_names}
        bounds = np.flatnonzero(np.diff(codes)) + 1
        starts = np.concatenate(([0], bounds)).astype(int).tolist()
        ends = [*bounds.tolist(), len(codes)]
        by_run: dict[str, dict[str, Distribution]] = {}
        sends: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for start, end in zip(starts, ends, strict=True):
            if end <= start:
                continue
            run_id = runs.dictionary[int(codes[start])].as_py()
            of_run = {m: a[start:end] for m, a in metrics.items()}
            by_run[run_id] = {m: Distribution.exact_of(a) for m, a in of_run.items() if m != "start"}
            sent, ttft = of_run.get("start"), of_run.get("ttft")
            if sent is not None and ttft is not None and not np.isnan(sent).all():
                kept = ~np.isnan(sent) & ~np.isnan(ttft)
                sends[run_id] = (sent[kept], ttft[kept])
        return cls(by_run, sends)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> Samples:
        """From rows of the lake's `requests` table (dicts with run_id, success, ttft_s, tpot_s, e2el_s and
        optionally request_index)."""
        listed = list(rows)
        if not listed:
            return cls.EMPTY
        columns = [c for c in _READ if any(c in r for r in listed)]
        schema = pa.schema([f for f in REQUESTS if f.name in columns])
        return cls.from_table(pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in listed], schema))


Samples.EMPTY = Samples({})


def alone(rows: Iterable[dict[str, Any]]) -> set[str]:
    """The run ids of `rows` (measured runs) whose whole distribution a report needs: each the only repeat of
    its point (`POINT_KEY`) within its campaign and A/B variant. One repeat's percentile interval comes from
    its own requests (`quantile_interval`), and a comparison of one-repeat sides from their within-repeat
    variance; a point, a campaign's trend point or a variant of two or more repeats needs their percentiles
    alone (their spread is the interval)."""
    listed = list(rows)

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        point = tuple(key_value(row, k) for k in POINT_KEY)
        return point, row.get("campaign_id"), row.get("variant")

    counts = Counter(key(r) for r in listed)
    return {str(r["run_id"]) for r in listed if counts[key(r)] < 2}


def read_samples(
    lake: Lake,
    run_ids: Collection[str],
    where: ds.Expression | None = None,
    replays: Collection[str] = (),
    whole: Collection[str] | None = None,
) -> Samples:
    """The samples of `run_ids` from the sketches table, reading only their rows: whole (values or sketch)
    for the runs in `whole` (None: every run), their stored percentiles alone for the others
    (`Distribution.summary`); runs it lacks from their requests, READ_RUNS runs at a time (memory stays
    bounded by one read: benchmarks/report_samples.py); `replays`' send times from their requests. `where`
    (e.g. the report filter's `partition_filter(flt, rows=False)`) prunes partitions unread."""
    wanted = sorted(set(run_ids))
    if not wanted:
        return Samples.EMPTY
    entire = wanted if whole is None else sorted(set(wanted) & set(whole))
    brief = [] if whole is None else sorted(set(wanted) - set(whole))
    found = Samples.EMPTY
    for chosen_runs, columns in ((entire, None), (brief, SUMMARY_COLUMNS)):
        if not chosen_runs:
            continue
        chosen = ds.field("run_id").isin(chosen_runs)
        read = lake.read("sketches", where=chosen if where is None else where & chosen, columns=columns)
        found = found.merged(Samples(distributions(read.to_pylist())))
    missing = [r for r in wanted if r not in found.by_run]
    from_requests = sorted(set(missing) | (set(replays) & set(wanted)))
    for start in range(0, len(from_requests), READ_RUNS):
        batch = ds.field("run_id").isin(from_requests[start : start + READ_RUNS]) & SUCCEEDED
        table = lake.read("requests", where=batch if where is None else where & batch, columns=_READ)
        read = Samples.from_table(table)
        kept = {r: d for r, d in read.by_run.items() if r in missing}  # a sketched run keeps its sketch
        found = found.merged(Samples(kept, read.sends))
    return found
