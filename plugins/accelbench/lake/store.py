"""Where the lake lives (a local directory or s3://bucket/prefix) and how files get there safely.

Local writes go to a hidden temporary file and are renamed into place (atomic on POSIX), and readers
skip hidden files, so nobody reads half a file. Parquet tables are written row group by row group to
such a file (a local temp file for S3), so memory does not grow with a table's rows. On S3 an object
appears only once its upload completes, and a write that meets an unreachable or failing S3
(connection errors, 5xx) is retried with exponential backoff, on top of botocore's own retries. File
names derive from deterministic ids, so a retried task replaces its own files.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem
from pyarrow.fs import FSSpecHandler, PyFileSystem
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from accelbench.config import LAKE_SETTING, S3_ENDPOINT_SETTINGS, Settings
from accelbench.errors import ConfigError
from accelbench.lake.compacted import COMPACTED_PREFIX, SOURCE, SOURCE_FIELD, live_files, vanished
from accelbench.lake.schemas import PARTITIONS, TABLES

log = logging.getLogger(__name__)


def transient(exc: BaseException) -> bool:
    """An S3 failure worth retrying: no connection, a dropped one, or a 5xx (s3fs wraps botocore errors)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (BotoConnectionError, HTTPClientError, ConnectionError, TimeoutError)):
            return True
        if isinstance(seen, ClientError):
            return int(seen.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0) >= 500
        seen = seen.__cause__ or seen.__context__
    return False


def safe_name(text: str) -> str:
    """A path segment from an id (Airflow run ids carry ':' and '+')."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_") or "_"


def storage_options(uri: str) -> dict[str, Any]:
    if uri.startswith("s3://"):
        endpoint = next((os.environ[k] for k in S3_ENDPOINT_SETTINGS if os.environ.get(k)), None)
        return {"client_kwargs": {"endpoint_url": endpoint}} if endpoint else {}
    return {}


class TableSink:
    """Rows appended to one Parquet file, flushed as a row group every ROW_GROUP_ROWS rows."""

    ROW_GROUP_ROWS = 1 << 17

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.schema = schema
        self._writer = pq.ParquetWriter(path, schema, compression="zstd")
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self.rows = 0
        self.row_groups = 0

    def write(self, table: pa.Table) -> None:
        self._pending.append(table.select(self.schema.names).cast(self.schema))
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending_rows:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=self._pending_rows)
            self.rows += self._pending_rows
            self.row_groups += 1
        self._pending, self._pending_rows = [], 0

    def __enter__(self) -> TableSink:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            self._flush()
        self._pending = []
        self._writer.close()


class Lake:
    # Tries of one S3 write, each after botocore's own retries; waits double from 1 s up to WRITE_WAIT_MAX_S.
    WRITE_ATTEMPTS = 4
    WRITE_WAIT_MAX_S = 8.0
    READ_ATTEMPTS = 3  # listings of one read (see `read`)

    def __init__(self, uri: str) -> None:
        if not uri:
            raise ConfigError(LAKE_SETTING, uri, "empty lake location")
        self.uri = uri.rstrip("/")
        try:
            self.fs, self.root = url_to_fs(self.uri, **storage_options(self.uri))
        except (ValueError, ImportError) as exc:
            raise ConfigError(LAKE_SETTING, uri, f"unsupported lake location ({exc})") from None
        self.local = isinstance(self.fs, LocalFileSystem)

    @classmethod
    def from_env(cls, settings: Settings | None = None) -> Lake:
        """ACCELBENCH_LAKE_URI, else the lake under the home (the two variables it needs, nothing else)."""
        settings = settings or Settings.from_env("lake_uri", "home")
        return cls(settings.lake.lake_location)

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def _retrying(self, dest: str) -> Retrying:
        """Tries of one S3 write: transient failures only, each wait announced with the object's name."""
        return Retrying(
            stop=stop_after_attempt(self.WRITE_ATTEMPTS),
            wait=wait_exponential(multiplier=1, max=self.WRITE_WAIT_MAX_S),
            retry=retry_if_exception(transient),
            before_sleep=lambda state: log.warning(
                "writing %s failed (%s), try %d of %d; retrying",
                self.uri_of(dest),
                state.outcome.exception() if state.outcome else "?",
                state.attempt_number,
                self.WRITE_ATTEMPTS,
            ),
            reraise=True,
        )

    def _spool(self, dest: str) -> Path:
        """Where a file is written before it is committed to `dest`: beside it locally (so the rename is
        atomic), in the local temp directory for S3 (uploaded whole, then deleted)."""
        if not self.local:
            fd, name = tempfile.mkstemp(prefix=".accelbench-", suffix=".tmp")
            os.close(fd)
            return Path(name)
        parent = dest.rsplit("/", 1)[0]
        self.fs.makedirs(parent, exist_ok=True)
        return Path(f"{parent}/.{dest.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp")

    def _commit(self, local: Path, dest: str) -> None:
        """Put a finished local file at `dest`: renamed into place locally, uploaded (with retries) to S3."""
        if not self.local:  # no makedirs: s3fs would create a missing bucket instead of failing
            for attempt in self._retrying(dest):
                with attempt:
                    self.fs.put_file(str(local), dest)
            return
        with local.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(local, dest)

    @contextmanager
    def _staged(self, dest: str) -> Iterator[Path]:
        """A file to fill; committed to `dest` only if the block ends without an error, removed either way."""
        tmp = self._spool(dest)
        try:
            yield tmp
            self._commit(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)

    def _write_bytes(self, dest: str, data: bytes) -> None:
        if not self.local:
            for attempt in self._retrying(dest):
                with attempt:
                    self.fs.pipe_file(dest, data)
            return
        with self._staged(dest) as tmp:
            tmp.write_bytes(data)

    def table_path(self, name: str, accelerator_type: str, date: str, stem: str) -> str:
        return self.path(name, f"accelerator_type={accelerator_type}", f"date={date}", f"{stem}.parquet")

    @contextmanager
    def table_writer(self, name: str, accelerator_type: str, date: str, stem: str) -> Iterator[TableSink]:
        """One Parquet file per (table, partition, stem), written piece by piece: memory stays bounded by
        a row group, not the file. The file replaces any earlier one only when the block ends cleanly."""
        dest = self.table_path(name, accelerator_type, date, stem)
        with self._staged(dest) as tmp:
            with TableSink(tmp, TABLES[name]) as sink:
                yield sink
            log.debug("%s: %d rows in %d row groups", self.uri_of(dest), sink.rows, sink.row_groups)

    def write_table(self, name: str, table: pa.Table, accelerator_type: str, date: str, stem: str) -> str:
        """One Parquet file per (table, partition, stem): writing it again replaces it."""
        with self.table_writer(name, accelerator_type, date, stem) as sink:
            sink.write(table)
        return self.table_path(name, accelerator_type, date, stem)

    def remove_tables(self, accelerator_type: str, date: str, stem: str) -> list[str]:
        """Delete every table's file of one stem (a spec that produced nothing in its latest attempt)."""
        gone = []
        for name in TABLES:
            dest = self.table_path(name, accelerator_type, date, stem)
            if self.fs.exists(dest):
                self.fs.rm_file(dest)
                gone.append(dest)
        return gone

    def put_bytes(self, data: bytes, *parts: str) -> str:
        """A whole file at lake path `parts` (atomic locally, one object on S3)."""
        dest = self.path(*parts)
        self._write_bytes(dest, data)
        return dest

    def put_raw(self, local: Path, *parts: str) -> str:
        dest = self.path("raw", *parts)
        if self.local:
            with self._staged(dest) as tmp:
                shutil.copyfile(local, tmp)
        else:  # streamed from the file: a raw result can be larger than memory wants to hold
            for attempt in self._retrying(dest):
                with attempt:
                    self.fs.put_file(str(local), dest)
        return dest

    def put_raw_text(self, text: str, *parts: str) -> str:
        """A small document written to raw/ whole (local: staged and renamed), as put_raw copies a file."""
        dest = self.path("raw", *parts)
        self._write_bytes(dest, text.encode())
        return dest

    def read(
        self, name: str, where: ds.Expression | None = None, columns: list[str] | None = None
    ) -> pa.Table:
        """The table with its partition columns (filtered: partitions are pruned), or an empty table. A file
        listed and then gone before it was read (a compaction removed it: accelbench.lake.compaction) makes
        it list and read again, up to READ_ATTEMPTS times."""
        for attempt in range(1, self.READ_ATTEMPTS + 1):
            try:
                return self._read(name, where, columns)
            except OSError as exc:
                if not vanished(exc) or attempt == self.READ_ATTEMPTS:
                    raise
                log.info("reading %s: %s changed while read (compacted?); listing again", name, exc)
                self.fs.invalidate_cache()
        raise AssertionError("unreachable")

    def _read(self, name: str, where: ds.Expression | None, columns: list[str] | None) -> pa.Table:
        base = self.path(name)
        schema = TABLES[name]
        full = pa.schema([*schema, *(pa.field(p, pa.string()) for p in PARTITIONS)])
        if not self.fs.exists(base):
            empty = full.empty_table()
            return empty.select(columns) if columns else empty
        filesystem = PyFileSystem(FSSpecHandler(self.fs))
        partitioning = ds.partitioning(pa.schema([(p, pa.string()) for p in PARTITIONS]), flavor="hive")
        live = live_files(self.fs, base, self.fs.find(base)) if self._compacted(base) else None
        if live is None:  # no compacted partition: the files as they are
            dataset = ds.dataset(
                base, filesystem=filesystem, format="parquet", partitioning=partitioning, schema=full
            )
            return dataset.to_table(filter=where, columns=columns)
        dataset = ds.dataset(
            live.files,
            filesystem=filesystem,
            format="parquet",
            partitioning=partitioning,
            partition_base_dir=base,
            schema=full.append(SOURCE_FIELD),
        )
        # A plain file wins over the compacted rows of its stem (accelbench.lake.compacted).
        shadowed = pa.array(sorted(live.shadowed), pa.string())
        keep = ds.field(SOURCE).is_null() | ~ds.field(SOURCE).isin(shadowed)
        return dataset.to_table(filter=keep if where is None else where & keep, columns=columns or full.names)

    def _compacted(self, base: str) -> bool:
        """Whether a partition of the table at `base` holds a compacted file (a glob: one listing)."""
        return bool(self.fs.glob(f"{base}/*/*/{COMPACTED_PREFIX}*.parquet"))

    def uri_of(self, path: str) -> str:
        return path if self.local else self.fs.unstrip_protocol(path)
