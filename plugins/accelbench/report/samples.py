"""The request samples a report's latency intervals are computed from: per kept run, the milliseconds of
its successful requests (the lake's `requests` table), so a percentile's interval can pool the requests
of a point's repeats (`accelbench.core.intervals.pooled_quantile_interval`).

Only the columns and runs needed are read: a lake holds up to 10^5 requests per level
(benchmarks/ingest_scaling.py), so the table is filtered on `run_id` while reading, a bounded number of
runs at a time, and each run keeps four float64 arrays (32 bytes per request: the three latencies and
the send time, which the trace replays table plots against).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from accelbench.lake.schemas import REQUESTS
from accelbench.lake.store import Lake

# metric -> the requests table's column (seconds); "start": when the request was sent, from the level's first
# (a trace's replay is shown against its arrivals: accelbench.report.tables.traces)
COLUMNS = {"ttft": "ttft_s", "tpot": "tpot_s", "e2el": "e2el_s", "start": "start_offset_s"}
_READ = ["run_id", "request_index", "success", *COLUMNS.values()]
READ_RUNS = 50  # runs per read of the requests table


def _milliseconds(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Seconds as milliseconds, NaN where a request did not measure it (e.g. TPOT of one output token)."""
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64) * 1000.0


def _measured(values: np.ndarray) -> np.ndarray:
    """A copy without the NaNs: a run's arrays own their memory, not a view of the whole read."""
    kept: np.ndarray = values[~np.isnan(values)]
    return kept


@dataclass(frozen=True)
class Samples:
    """run_id -> metric ("ttft", "tpot", "e2el") -> milliseconds of the repeat's successful requests, in
    request order. A run missing here (an imported result, an older lake) has no samples."""

    by_run: Mapping[str, Mapping[str, np.ndarray]] = field(default_factory=dict)

    EMPTY: ClassVar[Samples]

    def groups(self, run_ids: Iterable[str], metric: str) -> list[np.ndarray]:
        """One array per repeat that has samples of `metric`, in the order of `run_ids`."""
        found = (self.by_run.get(r, {}).get(metric) for r in run_ids)
        return [a for a in found if a is not None and a.size]

    @classmethod
    def from_table(cls, table: pa.Table) -> Samples:
        """From a `requests` table holding at least run_id, success and the metrics' columns (the rows of
        the runs to keep); sorted by request_index when it has one."""
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
        by_run: dict[str, dict[str, np.ndarray]] = {}
        for start, end in zip(starts, ends, strict=True):
            if end <= start:
                continue
            run_id = runs.dictionary[int(codes[start])].as_py()
            by_run[run_id] = {m: _measured(a[start:end]) for m, a in metrics.items()}
        return cls(by_run)

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


def read_samples(lake: Lake, run_ids: Collection[str], where: ds.Expression | None = None) -> Samples:
    """The samples of `run_ids`, reading only their rows and the columns needed, READ_RUNS runs at a time
    (memory stays bounded by one read, not the whole set: benchmarks/report_samples.py); `where` (e.g.
    the report filter's `partition_filter(flt, rows=False)`) prunes partitions unread."""
    wanted = sorted(set(run_ids))
    if not wanted:
        return Samples.EMPTY
    by_run: dict[str, Mapping[str, np.ndarray]] = {}
    for start in range(0, len(wanted), READ_RUNS):
        chosen = ds.field("run_id").isin(wanted[start : start + READ_RUNS]) & (ds.field("success") == True)  # noqa: E712
        table = lake.read("requests", where=chosen if where is None else where & chosen, columns=_READ)
        by_run |= Samples.from_table(table).by_run
    return Samples(by_run)
