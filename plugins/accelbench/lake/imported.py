"""Results measured elsewhere (`vllm bench serve --save-result` JSON files) into the same `runs` table.

GPU and Neuron baselines from other systems then sit beside this suite's campaigns in cross-tier
reports. The file does not say what it ran on, so the tier, instance type and model come from the
caller; the rows say `execution_mode=imported` and carry the file's lake copy (under imports/) in
`source_uri`.
Importing the same file again replaces its rows (ids derive from the file's bytes).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
from fsspec.core import url_to_fs
from pydantic import BaseModel, ConfigDict, ValidationError

from accelbench import __version__
from accelbench.core.metrics import CLIENT_LIMITED_RATIO, arrival_rate, peak_concurrency
from accelbench.errors import AccelbenchError, ConfigError
from accelbench.lake.ingest import request_table, result_columns
from accelbench.lake.rows import runs_table
from accelbench.lake.schemas import REQUESTS, SCHEMA_VERSION
from accelbench.lake.store import Lake, storage_options

IMPORT_CAMPAIGN = "imported"
IMPORTS_AREA = "imports"  # the workers' copy of imported files; raw/ is the benchmark pods' alone
DETAIL_KEYS = ("ttfts", "latencies", "itls", "input_lens", "output_lens")


class BenchServeResult(BaseModel):
    """The fields of a `vllm bench serve` result that a `runs` row needs; the rest is kept as is."""

    model_config = ConfigDict(extra="allow")

    date: str | None = None  # "%Y%m%d-%H%M%S", the client's local time when it saved the file
    num_prompts: int
    request_rate: float | Literal["inf"]  # a number, or "inf" (no rate limit)
    max_concurrency: int | None = None
    duration: float
    completed: int
    failed: int = 0
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    p99_ttft_ms: float
    p99_tpot_ms: float


@dataclass(frozen=True)
class ImportTarget:
    """What the files cannot say: where they were measured. Checked against the catalog by the caller."""

    accelerator_type: str
    instance_type: str
    accelerator_count: int
    model: str
    vllm_version: str | None = None
    quantization: str | None = None
    runtime: str | None = None  # default vllm-<tier>
    started_at: datetime | None = None  # overrides the file's own date (its client's local clock)


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)  # lake URIs of the copied source files
    runs: int = 0
    requests: int = 0
    refused: dict[str, str] = field(default_factory=dict)  # source file -> why


class ImportRefused(AccelbenchError):
    """A file that is not a usable `vllm bench serve` result."""


def check_source(source: str, roots: tuple[Path, ...]) -> None:
    """Only s3:// prefixes and local paths under the configured import roots: the param must not make
    a worker fetch URLs (http://, ftp://, ...) or read its own files outside those directories."""
    if source.startswith("s3://"):
        return
    if "://" in source or not source.startswith("/"):
        raise ConfigError("source", source, "give an s3:// prefix or an absolute local path")
    path = Path(source).resolve()
    if not any(path.is_relative_to(root.resolve()) for root in roots):
        allowed = ", ".join(str(r) for r in roots)
        raise ConfigError(
            "source", source, f"not under the import roots ({allowed}; ACCELBENCH_IMPORT_ROOTS)"
        )


def list_result_files(source: str) -> tuple[Any, list[str]]:
    """(filesystem, sorted JSON file paths) under a directory or an s3:// prefix (see check_source)."""
    try:
        fs, root = url_to_fs(source, **storage_options(source))
    except (ValueError, ImportError) as exc:
        raise ConfigError("source", source, f"unsupported location ({exc})") from None
    if not fs.exists(root):
        raise ConfigError("source", source, "no such directory or prefix")
    if fs.isfile(root):
        return fs, [root]
    return fs, sorted(p for p in fs.find(root) if p.endswith(".json"))


def _level(result: BenchServeResult) -> tuple[str, float]:
    if result.max_concurrency:
        return "concurrency", float(result.max_concurrency)
    rate = float(result.request_rate)
    # No concurrency cap and an infinite rate: every prompt is sent at once.
    return ("rate", rate) if math.isfinite(rate) else ("concurrency", float(result.num_prompts))


def _started_at(result: BenchServeResult, target: ImportTarget, name: str) -> datetime:
    """The date param if given, else the file's `date` (the client's local clock, read as UTC)."""
    if target.started_at is not None:
        return target.started_at
    try:
        return datetime.strptime(result.date or "", "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        raise ImportRefused(
            f"{name}: no usable 'date' field ({result.date!r}); give the date param"
        ) from None


def parse_result(data: bytes, name: str) -> tuple[BenchServeResult, dict[str, Any]]:
    try:
        raw = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ImportRefused(f"{name}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ImportRefused(f"{name}: not a JSON object")
    try:
        return BenchServeResult.model_validate(raw), raw
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ImportRefused(f"{name}: not a vllm bench serve result ({problems})") from None


def _tables(
    result: BenchServeResult, raw: dict[str, Any], target: ImportTarget, ids: dict[str, Any]
) -> tuple[pa.Table, pa.Table]:
    """The file's `runs` row and `requests` rows as tables of the lake's schemas."""
    tier = target.accelerator_type
    kind, value = _level(result)
    achieved = arrival_rate(raw | {"completed": result.completed, "duration": result.duration})
    details = all(isinstance(raw.get(k), list) for k in DETAIL_KEYS)  # saved with --save-detailed
    row: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        **ids,
        "campaign_id": IMPORT_CAMPAIGN,
        "level_kind": kind,
        "level_value": value,
        "repeat": 0,
        # As for a campaign level: some requests failed is "errors" (percentiles cover the finished ones),
        # none completed is "failed".
        "status": "failed" if not result.completed else "errors" if result.failed else "ok",
        "error": f"{result.failed} of {result.num_prompts} requests failed" if result.failed else None,
        "wall_s": result.duration,
        "requested_rate": value if kind == "rate" else None,
        "achieved_rate": achieved,
        "client_limited": kind == "rate" and achieved is not None and achieved < CLIENT_LIMITED_RATIO * value,
        "peak_concurrency": peak_concurrency(raw["start_times"], raw["latencies"])
        if details and isinstance(raw.get("start_times"), list)
        else None,
        "suite_version": __version__,
        "vllm_version": target.vllm_version,
        "runtime": target.runtime or f"vllm-{tier}",
        "model": target.model,
        "served_model_name": raw.get("model_id"),
        "quantization": target.quantization,
        "instance_type": target.instance_type,
        # The importer declares where the file was measured: on the instance type itself, so prices apply.
        "host_instance_type": target.instance_type,
        "measured_on_instance": True,
        "accelerator_count": target.accelerator_count,
        "dataset": raw.get("dataset_name"),
        "execution_mode": "imported",
    } | result_columns(result.model_dump())
    requests = (
        request_table(raw, ids["run_id"], IMPORT_CAMPAIGN, ids["spec_id"])
        if details
        else REQUESTS.empty_table()
    )
    return runs_table([row], complete=False), requests


def import_file(
    lake: Lake, data: bytes, name: str, target: ImportTarget, dag_run_id: str
) -> tuple[str, int, int]:
    """One result file -> a copy under imports/, one `runs` row and its `requests` rows.

    Returns (copy URI, runs, requests). Written in that order, so rows never point at a missing copy.
    """
    result, raw = parse_result(data, name)
    digest = hashlib.sha256(data).hexdigest()[:16]
    started = _started_at(result, target, name)
    day, tier = started.date().isoformat(), target.accelerator_type
    copy_parts = (IMPORTS_AREA, f"accelerator_type={tier}", f"date={day}", f"{digest}.json")
    ids: dict[str, Any] = {
        "run_id": f"{IMPORT_CAMPAIGN}/{digest}",
        "spec_id": f"{target.instance_type}-{IMPORT_CAMPAIGN}",
        "dag_run_id": dag_run_id,
        "started_at": started,
        "source_uri": lake.uri_of(lake.path(*copy_parts)),
    }
    try:
        runs, requests = _tables(result, raw, target, ids)
    except (
        KeyError,
        TypeError,
        ValueError,
        OverflowError,
        pa.ArrowTypeError,
    ) as exc:  # ArrowInvalid: ValueError
        raise ImportRefused(
            f"{name}: a field has the wrong type or length ({type(exc).__name__}: {exc})"
        ) from None
    stem = f"{IMPORT_CAMPAIGN}--{digest}"
    keep = {lake.put_bytes(data, *copy_parts)}
    keep.add(lake.write_table("requests", requests, tier, day, stem))  # before runs: see ingest_raw
    keep.add(lake.write_table("runs", runs, tier, day, stem))
    _drop_other_copies(lake, stem, digest, keep)
    return ids["source_uri"], 1, requests.num_rows


def _drop_other_copies(lake: Lake, stem: str, digest: str, keep: set[str]) -> None:
    """The same file imported before under another tier or date: its old rows and copy go, so a file
    is in the lake once (new files first, then the old ones are removed: nothing is lost midway)."""
    patterns = [lake.path(t, "*", "*", f"{stem}.parquet") for t in ("runs", "requests")]
    patterns.append(lake.path(IMPORTS_AREA, "*", "*", f"{digest}.json"))
    for pattern in patterns:
        for path in lake.fs.glob(pattern):
            if path.rstrip("/") not in {k.rstrip("/") for k in keep}:
                lake.fs.rm_file(path)


def import_results(
    lake: Lake, source: str, target: ImportTarget, dag_run_id: str, roots: tuple[Path, ...]
) -> ImportReport:
    """Every JSON file under `source`; a refused file is reported and never stops the others."""
    check_source(source, roots)
    fs, paths = list_result_files(source)
    if not paths:
        raise ConfigError("source", source, "holds no .json file")
    report = ImportReport()
    for path in paths:
        name = fs.unstrip_protocol(path) if source.startswith("s3://") else path
        try:
            copy, runs, requests = import_file(lake, fs.cat_file(path), name, target, dag_run_id)
        except ImportRefused as exc:
            report.refused[name] = str(exc)
            continue
        report.imported.append(copy)
        report.runs += runs
        report.requests += requests
    return report
