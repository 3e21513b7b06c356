"""Where the lake lives (a local directory or s3://bucket/prefix) and how files get there safely.

Local writes go to a hidden temporary file and are renamed into place (atomic on POSIX), and readers
skip hidden files, so nobody reads half a file. On S3 an object appears only once its upload
completes, and a write that meets an unreachable or failing S3 (connection errors, 5xx) is retried
with exponential backoff, on top of botocore's own retries. File names derive from deterministic ids,
so a retried task replaces its own files.
"""

from __future__ import annotations

import io
import logging
import os
import re
import uuid
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


class Lake:
    # Tries of one S3 write, each after botocore's own retries; waits double from 1 s up to WRITE_WAIT_MAX_S.
    WRITE_ATTEMPTS = 4
    WRITE_WAIT_MAX_S = 8.0

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
        settings = settings or Settings.from_env()
        return cls(os.environ.get(LAKE_SETTING, "").strip() or str(settings.home / "lake"))

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def _write_bytes(self, dest: str, data: bytes) -> None:
        parent = dest.rsplit("/", 1)[0]
        if not self.local:  # no makedirs: s3fs would create a missing bucket instead of failing
            for attempt in Retrying(
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
            ):
                with attempt:
                    self.fs.pipe_file(dest, data)
            return
        self.fs.makedirs(parent, exist_ok=True)
        tmp = f"{parent}/.{dest.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, dest)

    def write_table(self, name: str, table: pa.Table, accelerator_type: str, date: str, stem: str) -> str:
        """One Parquet file per (table, partition, stem): writing it again replaces it."""
        schema = TABLES[name]
        table = table.select(schema.names).cast(schema)
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd")
        dest = self.path(name, f"accelerator_type={accelerator_type}", f"date={date}", f"{stem}.parquet")
        self._write_bytes(dest, buf.getvalue())
        return dest

    def remove_tables(self, accelerator_type: str, date: str, stem: str) -> list[str]:
        """Delete every table's file of one stem (a spec that produced nothing in its latest attempt)."""
        gone = []
        for name in TABLES:
            dest = self.path(name, f"accelerator_type={accelerator_type}", f"date={date}", f"{stem}.parquet")
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
        self._write_bytes(dest, local.read_bytes())
        return dest

    def read(
        self, name: str, where: ds.Expression | None = None, columns: list[str] | None = None
    ) -> pa.Table:
        """The table with its partition columns (filtered: partitions are pruned), or an empty table."""
        base = self.path(name)
        schema = TABLES[name]
        full = pa.schema([*schema, *(pa.field(p, pa.string()) for p in PARTITIONS)])
        if not self.fs.exists(base):
            empty = full.empty_table()
            return empty.select(columns) if columns else empty
        dataset = ds.dataset(
            base,
            filesystem=PyFileSystem(FSSpecHandler(self.fs)),
            format="parquet",
            partitioning=ds.partitioning(pa.schema([(p, pa.string()) for p in PARTITIONS]), flavor="hive"),
            schema=full,
        )
        return dataset.to_table(filter=where, columns=columns)

    def uri_of(self, path: str) -> str:
        return path if self.local else self.fs.unstrip_protocol(path)
