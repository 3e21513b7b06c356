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
from typing import Any

import pyarrow as pa
from fsspec.core import url_to_fs
from pydantic import BaseModel, ConfigDict, ValidationError

from accelbench import __version__
from accelbench.errors import AccelbenchError, ConfigError
from accelbench.lake.ingest import request_rows, result_columns
from accelbench.lake.schemas import REQUESTS, RUNS, SCHEMA_VERSION
from accelbench.lake.store import Lake, storage_options

IMPORT_CAMPAIGN = "imported"
IMPORTS_AREA = "imports"  # the workers' copy of imported files; raw/ is the benchmark pods' alone
DETAIL_KEYS = ("ttfts", "latencies", "itls", "input_lens", "output_lens")


class BenchServeResult(BaseModel):
    """The fields of a `vllm bench serve` result that a `runs` row needs; the rest is kept as is."""

    model_config = ConfigDict(extra="allow")

    date: str | None = None  # "%Y%m%d-%H%M%S", the client's local time when it saved the file
    num_prompts: int
    request_rate: float | str  # a number, or "inf"
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
    started_at: datetime | None = None  # when the file has no usable date


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)  # lake URIs of the copied source files
    runs: int = 0
    requests: int = 0
    refused: dict[str, str] = field(default_factory=dict)  # source file -> why


class ImportRefused(AccelbenchError):
    """A file that is not a usable `vllm bench serve` result."""


def list_result_files(source: str) -> tuple[Any, list[str]]:
    """(filesystem, sorted JSON file paths) under a directory or an s3:// prefix."""
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
    if result.date:
        try:
            return datetime.strptime(result.date, "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
        except ValueError:
            pass
    if target.started_at is None:
        raise ImportRefused(f"{name}: no usable 'date' field ({result.date!r}); give the date param")
    return target.started_at


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


def import_file(
    lake: Lake, data: bytes, name: str, target: ImportTarget, dag_run_id: str
) -> tuple[str, int, int]:
    """One result file -> a raw copy, one `runs` row and its `requests` rows; (copy URI, runs, requests)."""
    result, raw = parse_result(data, name)
    digest = hashlib.sha256(data).hexdigest()[:16]
    started = _started_at(result, target, name)
    day = started.date().isoformat()
    tier = target.accelerator_type
    copy = lake.uri_of(
        lake.put_bytes(data, IMPORTS_AREA, f"accelerator_type={tier}", f"date={day}", f"{digest}.json")
    )
    run_id = f"{IMPORT_CAMPAIGN}/{digest}"
    spec_id = f"{target.instance_type}-{IMPORT_CAMPAIGN}"
    kind, value = _level(result)
    row: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "campaign_id": IMPORT_CAMPAIGN,
        "spec_id": spec_id,
        "dag_run_id": dag_run_id,
        "level_kind": kind,
        "level_value": value,
        "repeat": 0,
        "status": "ok" if result.completed > 0 else "failed",
        "error": f"{result.failed} of {result.num_prompts} requests failed" if result.failed else None,
        "started_at": started,
        "wall_s": result.duration,
        "requested_rate": float(result.request_rate),
        "achieved_rate": result.request_throughput,
        "suite_version": __version__,
        "vllm_version": target.vllm_version,
        "runtime": target.runtime or f"vllm-{tier}",
        "model": target.model,
        "served_model_name": raw.get("model_id"),
        "quantization": target.quantization,
        "instance_type": target.instance_type,
        "accelerator_count": target.accelerator_count,
        "dataset": raw.get("dataset_name"),
        "execution_mode": "imported",
        "source_uri": copy,
    } | result_columns(result.model_dump())
    requests = []
    if all(isinstance(raw.get(k), list) for k in DETAIL_KEYS):  # saved with --save-detailed
        try:
            requests = request_rows(raw, run_id, IMPORT_CAMPAIGN, spec_id)
        except (KeyError, TypeError, ValueError) as exc:
            raise ImportRefused(f"{name}: per-request fields do not line up ({exc})") from None
    stem = f"{IMPORT_CAMPAIGN}--{digest}"
    lake.write_table("runs", pa.Table.from_pylist([row], schema=RUNS), tier, day, stem)
    lake.write_table("requests", pa.Table.from_pylist(requests, schema=REQUESTS), tier, day, stem)
    return copy, 1, len(requests)


def import_results(lake: Lake, source: str, target: ImportTarget, dag_run_id: str) -> ImportReport:
    """Every JSON file under `source`; a refused file is reported and never stops the others."""
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
