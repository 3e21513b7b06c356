"""Compaction (issue 50): a partition's many small files rewritten into one, so that a year of campaigns
is read in a file per partition, not a file per server and day.

`compact_partition` reads the partition's live rows (the reader's rule: `accelbench.lake.compacted`), writes
them to `compacted-<digest>.parquet` (the digest of its inputs' names and versions: a retry writes the same
file), checks the file read back against what was read (row count, each numeric column's sum, the set of
run ids), and only then deletes its inputs, each plain file only if it is still the version that was read
(a campaign that re-landed it meanwhile keeps its new file, which wins over the compacted rows). A campaign
landing a new file during compaction is not an input and is untouched; a failure before the check deletes
nothing, and a failure after it leaves files the reader's rule already reads once. One compaction of a
partition at a time (the maintenance DAG runs one at a time).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from accelbench.lake.compacted import (
    COMPACTED_PREFIX,
    REPLACES,
    SOURCE,
    SOURCE_FIELD,
    is_compacted,
    live_files,
    name_of,
    readable,
    replaced_by,
    source_of,
    vanished,
)
from accelbench.lake.schemas import TABLES
from accelbench.lake.store import Lake, TableSink

log = logging.getLogger(__name__)


class CompactionMismatch(RuntimeError):
    """The compacted file read back is not what its inputs held: nothing was deleted."""


@dataclass(frozen=True)
class Compacted:
    """One partition's compaction: its input files, the file written (None: nothing to do), its rows, and
    the inputs left in place because a campaign re-landed them meanwhile."""

    table: str
    partition: str
    inputs: int
    written: str | None
    rows: int
    kept: tuple[str, ...] = ()


def partitions(lake: Lake, table: str) -> list[str]:
    """The table's partition directories (`accelerator_type=.../date=...`) with more than one live file."""
    base = lake.path(table)
    if not lake.fs.exists(base):
        return []
    counts: dict[str, int] = {}
    for path in lake.fs.find(base):
        if readable(path):
            part = source_of(path, base).rsplit("/", 1)[0]
            counts[part] = counts.get(part, 0) + 1
    return sorted(p for p, n in counts.items() if n > 1)


def _version(lake: Lake, path: str) -> tuple[Any, ...]:
    """What says a file was not replaced since it was read: its size and its ETag (S3) or mtime (local)."""
    info = lake.fs.info(path)
    return info.get("size"), info.get("ETag") or info.get("mtime") or info.get("LastModified")


def _conform(piece: pa.Table, schema: pa.Schema) -> pa.Table:
    """A file's rows in the table's schema of today: a column an older file lacks is null (as the reader
    reads it), each column cast to its type."""
    columns = [
        piece[f.name].cast(f.type) if f.name in piece.column_names else pa.nulls(piece.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _checksums(table: pa.Table) -> dict[str, Any]:
    """Row count, each numeric column's sum, and the set of run ids: what must survive compaction."""
    sums: dict[str, Any] = {"rows": table.num_rows}
    for name in table.column_names:
        kind = table.schema.field(name).type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            sums[name] = pc.sum(table[name]).as_py()
    if "run_id" in table.column_names:
        sums["run_ids"] = set(pc.unique(table["run_id"]).to_pylist())
    return sums


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    for key in a.keys() | b.keys():
        x, y = a.get(key), b.get(key)
        if isinstance(x, float) and isinstance(y, float):
            if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9):
                return False
        elif x != y:
            return False
    return True


READ_ATTEMPTS = 3  # of a partition's read, when a campaign changes it meanwhile


def compact_partition(lake: Lake, table: str, partition: str) -> Compacted:
    """Compact one partition (`accelerator_type=cpu/date=2026-01-01`) of `table` (see the module); a file
    that changes while the partition is read (a campaign re-landing it) makes it start again."""
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            return _compact_partition(lake, table, partition)
        except OSError as exc:
            if not vanished(exc) or attempt == READ_ATTEMPTS:
                raise
            log.info("compacting %s/%s: %s changed while read; starting again", table, partition, exc)
    raise AssertionError("unreachable")


def _compact_partition(lake: Lake, table: str, partition: str) -> Compacted:
    base = lake.path(table)
    folder = f"{base}/{partition}"
    lake.fs.invalidate_cache()  # s3fs keeps listings: another process lands files meanwhile
    paths = sorted(p for p in lake.fs.find(folder) if readable(p) and p.rsplit("/", 1)[0] == folder)
    live = live_files(lake.fs, base, paths)
    files = live.files if live is not None else paths
    if len(files) <= 1:
        return Compacted(table, partition, len(files), None, 0)
    versions = {p: _version(lake, p) for p in files if not is_compacted(p)}
    shadowed = set(live.shadowed) if live is not None else set()
    schema = pa.schema([*TABLES[table], SOURCE_FIELD])
    pieces = []
    for path in files:
        with lake.fs.open(path, "rb") as handle:
            piece = pq.read_table(handle)
        if is_compacted(path):
            piece = piece.filter(pc.invert(pc.is_in(piece[SOURCE], pa.array(sorted(shadowed), pa.string()))))
        else:
            origin = pa.array([source_of(path, base)] * piece.num_rows, pa.string())
            piece = piece.append_column(SOURCE, origin)
        pieces.append(_conform(piece, schema))
    rows = pa.concat_tables(pieces)
    expected = _checksums(rows.drop_columns([SOURCE]))
    digest = hashlib.sha256(json.dumps(sorted((name_of(p), str(versions.get(p))) for p in files)).encode())
    replaces = sorted({name_of(p) for p in paths if is_compacted(p)})
    stem = f"{COMPACTED_PREFIX}{digest.hexdigest()[:16]}"
    tier, date = (part.split("=", 1)[1] for part in partition.split("/"))
    dest = lake.table_path(table, tier, date, stem)
    marked = schema.with_metadata({REPLACES: json.dumps(replaces).encode()})
    with lake._staged(dest) as tmp, TableSink(tmp, marked) as sink:
        sink.write(rows)
    with lake.fs.open(dest, "rb") as handle:
        back = pq.read_table(handle)
    if not _same(expected, _checksums(back.drop_columns([SOURCE]))) or replaced_by(lake.fs, dest) != replaces:
        raise CompactionMismatch(f"{lake.uri_of(dest)}: read back, it does not hold its inputs' rows")
    kept = []
    for path in files:
        if name_of(path) == name_of(dest):
            continue
        if not is_compacted(path) and _version(lake, path) != versions[path]:
            kept.append(path)  # re-landed meanwhile: its new rows win over the compacted ones
            continue
        lake.fs.rm_file(path)
    for path in paths:  # compacted files an earlier compaction replaced, if still there
        if is_compacted(path) and path not in files and lake.fs.exists(path):
            lake.fs.rm_file(path)
    log.info(
        "compacted %s/%s: %d files, %d rows -> %s%s",
        table,
        partition,
        len(files),
        rows.num_rows,
        name_of(dest),
        f" ({len(kept)} re-landed meanwhile, kept)" if kept else "",
    )
    return Compacted(table, partition, len(files), dest, rows.num_rows, tuple(kept))


@dataclass
class TableCompaction:
    """One table's compaction run: partitions compacted, the files they held, their rows, and the re-landed
    files kept beside them."""

    partitions: int = 0
    files: int = 0
    rows: int = 0
    kept: int = 0


def compact(
    lake: Lake, tables: Iterable[str] | None = None, newest: date | None = None
) -> dict[str, TableCompaction]:
    """Every partition of `tables` (default: every table) with more than one file and dated `newest` or
    earlier (None: any day; campaigns still land in the latest days), compacted; per table, what it did."""
    done: dict[str, TableCompaction] = {}
    for table in tables or TABLES:
        counts = done.setdefault(table, TableCompaction())
        for partition in partitions(lake, table):
            if newest is not None and date.fromisoformat(partition.rsplit("date=", 1)[1]) > newest:
                log.info("%s/%s: within the last days, left alone", table, partition)
                continue
            result = compact_partition(lake, table, partition)
            if result.written:
                counts.partitions += 1
                counts.files += result.inputs
                counts.rows += result.rows
                counts.kept += len(result.kept)
        log.info("%s: %s", table, counts)
    return done
