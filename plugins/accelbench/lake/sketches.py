"""The `sketches` table: each run's latency distributions (`accelbench.core.sketches.Distribution`), built at
ingest from the run's `requests` rows and read back by the report, so that a report reads a few hundred
numbers per run however many requests the run sent (issue 50)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from accelbench.core.sketches import Distribution
from accelbench.lake.schemas import SCHEMA_VERSION, SKETCH_QUANTILES, SKETCHED_METRICS, SKETCHES, LakeRow

QUANTILE_COLUMNS = {q: f"p{round(q * 100)}_ms" for q in SKETCH_QUANTILES}
# What a run's percentiles alone are read from (`Distribution.summary`): a few numbers, no values or bins.
SUMMARY_COLUMNS = [
    "run_id",
    "metric",
    "count",
    "zero_count",
    "total_ms",
    "min_ms",
    "max_ms",
    *QUANTILE_COLUMNS.values(),
]


def sketch_table(requests: pa.Table) -> pa.Table:
    """The `sketches` rows of every run in `requests` (rows of the requests table: run_id, campaign_id,
    spec_id, success and the metrics' columns, in seconds): one row per run and metric, of its successful
    requests, in milliseconds."""
    if requests.num_rows == 0:
        return SKETCHES.empty_table()
    ok = requests.filter(pc.equal(requests["success"], True))
    rows: list[LakeRow] = []
    for run_id in pc.unique(requests["run_id"]).to_pylist():
        of_run = ok.filter(pc.equal(ok["run_id"], run_id))
        run = requests.filter(pc.equal(requests["run_id"], run_id)).slice(0, 1).to_pylist()[0]
        for metric, column in SKETCHED_METRICS.items():
            seconds = of_run[column].to_numpy(zero_copy_only=False).astype(np.float64)
            rows.append(sketch_row(seconds * 1000.0, metric, run))
    return pa.Table.from_pylist(rows, schema=SKETCHES)


def sketch_row(milliseconds: np.ndarray, metric: str, run: Mapping[str, Any]) -> LakeRow:
    """One row of the table: the distribution of `milliseconds` (NaN left out), `metric` of `run` (its
    run_id, campaign_id and spec_id), with its exact median-unbiased quantiles."""
    dist = Distribution.of(milliseconds)
    measured = milliseconds[np.isfinite(milliseconds)]
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run["run_id"],
        "campaign_id": run.get("campaign_id"),
        "spec_id": run.get("spec_id"),
        "metric": metric,
        "count": dist.count,
        "zero_count": dist.zero_count,
        "total_ms": dist.total,
        "min_ms": dist.low if dist.count else None,
        "max_ms": dist.high if dist.count else None,
        **{
            column: float(np.quantile(measured, q, method="median_unbiased")) if dist.count else None
            for q, column in QUANTILE_COLUMNS.items()
        },
        "values_ms": None if dist.values is None else dist.values.tolist(),
        "relative_accuracy": dist.relative_accuracy,
        "key_offset": None if dist.bins is None else dist.offset,
        "bin_counts": None if dist.bins is None else dist.bins.tolist(),
    }


def distribution(row: Mapping[str, Any]) -> Distribution:
    """A row of the table as the distribution it holds, with its stored percentiles; a row read without its
    values and bins (`SUMMARY_COLUMNS`) as its percentiles alone."""
    count, values, zeros = int(row["count"] or 0), row.get("values_ms"), int(row.get("zero_count") or 0)
    total = float(row.get("total_ms") or 0.0)
    low, high = (float("nan") if row.get(c) is None else float(row[c]) for c in ("min_ms", "max_ms"))
    stored = {q: float(row[c]) for q, c in QUANTILE_COLUMNS.items() if row.get(c) is not None}
    if "values_ms" not in row and "bin_counts" not in row:
        return Distribution.summary(count, stored, zero_count=zeros, total=total, low=low, high=high)
    if values is not None:
        return Distribution(
            count,
            np.asarray(values, dtype=np.float64),
            zero_count=zeros,
            total=total,
            low=low,
            high=high,
            percentiles=stored,
        )
    bins = np.asarray(row.get("bin_counts") or [], dtype=np.int64)
    accuracy = float(row["relative_accuracy"])
    offset = int(row["key_offset"] or 0)
    return Distribution(count, None, offset, bins, zeros, accuracy, total, low, high, percentiles=stored)


def distributions(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Distribution]]:
    """run_id -> metric -> its distribution, from rows of the table."""
    found: dict[str, dict[str, Distribution]] = {}
    for row in rows:
        found.setdefault(str(row["run_id"]), {})[str(row["metric"])] = distribution(row)
    return found
