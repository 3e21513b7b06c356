"""Which files of a table a reader reads once partitions have been compacted (issue 50; the compaction
itself: `accelbench.lake.compaction`).

A compacted file (`compacted-<digest>.parquet`) holds the rows of many of its partition's files, each row
with its `_source`: the partition-relative path of the file it came from (`accelerator_type=cpu/date=
2026-01-01/<stem>`). Its inputs are deleted only after it is written and checked, so for a while both exist,
and a campaign may land (or a retry re-land) a stem after it was compacted. The rule that keeps every row
exactly once, whatever the moment:

- a plain file wins over the compacted rows of its stem (the newer landing, or the copy not yet deleted);
- a compacted file named in another one's `replaces` (its footer's key-value metadata) is superseded;
- files whose names start with `.` or `_` are not read (a local write in progress: `accelbench.lake.store`).

A table with no compacted file is read as before, by discovering its files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

COMPACTED_PREFIX = "compacted-"
SOURCE = "_source"  # a compacted file's column: where each row came from (see the module docstring)
REPLACES = b"accelbench.compaction.replaces"  # a compacted file's metadata: the compacted files it replaces
SOURCE_FIELD = pa.field(SOURCE, pa.string())


def vanished(exc: BaseException) -> bool:
    """A file listed and then gone or replaced before it was read (s3fs reads the version it listed: a new
    one is its FileExpired), e.g. while a compaction or a campaign changed its partition."""
    from s3fs.utils import FileExpired  # type: ignore[import-untyped]

    return isinstance(exc, FileNotFoundError | FileExpired)


def name_of(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def readable(path: str) -> bool:
    """A Parquet file a reader reads (not one being written, not a hidden one)."""
    name = name_of(path)
    return name.endswith(".parquet") and not name.startswith((".", "_"))


def is_compacted(path: str) -> bool:
    return name_of(path).startswith(COMPACTED_PREFIX)


def source_of(path: str, base: str) -> str:
    """A plain file's `_source`: its path under the table's `base`, without `.parquet`."""
    return path[len(base.rstrip("/")) + 1 :].removesuffix(".parquet")


def replaced_by(fs: Any, path: str) -> list[str]:
    """The names of the compacted files that the compacted file at `path` replaces (its footer)."""
    with fs.open(path, "rb") as handle:
        metadata = pq.read_metadata(handle).metadata or {}
    return list(json.loads(metadata.get(REPLACES, b"[]")))


@dataclass
class Live:
    """What to read of a table: `files` (plain and live compacted ones) and the `_source`s whose compacted
    rows a plain file shadows."""

    files: list[str] = field(default_factory=list)
    shadowed: set[str] = field(default_factory=set)


def live_files(fs: Any, base: str, paths: Iterable[str]) -> Live | None:
    """The rule of the module docstring over the table's `paths` (under `base`); None when no partition is
    compacted (read the table as before)."""
    kept = [p for p in paths if readable(p)]
    if not any(is_compacted(p) for p in kept):
        return None
    by_dir: dict[str, list[str]] = {}
    for path in kept:
        by_dir.setdefault(path.rsplit("/", 1)[0], []).append(path)
    live = Live()
    for files in by_dir.values():
        compacted = [p for p in files if is_compacted(p)]
        plain = [p for p in files if not is_compacted(p)]
        live.files.extend(plain)
        if not compacted:
            continue
        superseded = {name for p in compacted for name in replaced_by(fs, p)}
        live.files.extend(p for p in compacted if name_of(p) not in superseded)
        live.shadowed.update(source_of(p, base) for p in plain)
    return live
