"""Results measured elsewhere (`vllm bench serve --save-result` JSON files) into the same `runs` table.

GPU and Neuron baselines from other systems then sit beside this suite's campaigns in cross-tier
reports. The file does not say what it ran on, nor with which server: the tier, instance type, model,
vLLM version, image, tensor parallelism and workload come from the caller (ImportTarget, checked when
made). What the file does record is taken from it and must agree with the caller: the endpoint its
`backend` calls, the mean request lengths, a model-store `model_id`, and `--metadata` keys named like
the caller's fields. The rows then carry the same configuration and workload columns as a campaign's,
so the report compares like with like; they say `execution_mode=imported` and carry the file's lake
copy (under imports/) in `source_uri`.
Importing the same file again replaces its rows (ids derive from the file's bytes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

import pyarrow as pa
from fsspec.core import url_to_fs
from pydantic import BaseModel, ConfigDict, ValidationError

from accelbench import __version__
from accelbench.core.metrics import CLIENT_LIMITED_RATIO, arrival_rate, peak_concurrency
from accelbench.core.model_origin import model_identity
from accelbench.core.workloads import DEFAULT_WORKLOAD, ENDPOINTS, PROFILES, WorkloadName
from accelbench.errors import AccelbenchError, ConfigError
from accelbench.lake.ingest import request_table, result_columns
from accelbench.lake.rows import runs_table
from accelbench.lake.schemas import IMPORTED_MODE, REQUESTS, SCHEMA_VERSION
from accelbench.lake.sketches import sketch_table
from accelbench.lake.store import Lake, storage_options

IMPORT_CAMPAIGN = "imported"
IMPORTS_AREA = "imports"  # the workers' copy of imported files; raw/ is the benchmark pods' alone
DETAIL_KEYS = ("ttfts", "latencies", "itls", "input_lens", "output_lens")
WORKLOADS: tuple[str, ...] = get_args(WorkloadName)
# The endpoint each `vllm bench serve --backend` calls (the file's `backend`; `endpoint_type` in older files).
BACKEND_ENDPOINTS = {backend: name for name, (backend, _path) in ENDPOINTS.items()} | {"vllm": "completions"}
# A file's mean request length may differ from the stated one by this share of it (or the length range,
# if wider: a short file's mean wanders within it) plus a few tokens: vLLM realigns random prompts to the
# server's tokenizer, which adds or drops a token or two.
LENGTH_TOLERANCE = 0.10
LENGTH_SLACK_TOKENS = 2
# `--metadata key=value` keys named like an ImportTarget field, with their type: they fill what the caller
# left empty and must agree with what it gave (the bench client writes every value as a string).
METADATA_FIELDS: dict[str, type] = {
    "model": str,
    "vllm_version": str,
    "image": str,
    "tensor_parallel_size": int,
    "quantization": str,
    "workload": str,
    "endpoint": str,
    "dataset": str,
    "input_len": int,
    "output_len": int,
    "range_ratio": float,
}
_MODEL_STORE_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")  # org/name, not a path


class BenchServeResult(BaseModel):
    """The fields of a `vllm bench serve` result that a `runs` row needs; the rest is kept as is."""

    model_config = ConfigDict(extra="allow")

    date: str | None = None  # "%Y%m%d-%H%M%S", the client's local time when it saved the file
    backend: str | None = None  # --backend: which endpoint the requests went to (BACKEND_ENDPOINTS)
    endpoint_type: str | None = None  # the same, under its older name
    model_id: str | None = None  # --model: a model-store id or a path
    num_prompts: int
    burstiness: float | None = None
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
    """What the files cannot say: where, with which server and on which workload they were measured.

    Checked when made (a ConfigError names the field at fault); the instance type against the catalog by
    the caller. The workload is a profile of accelbench.core.workloads: `fixed` (random prompts of
    `input_len`/`output_len`, both required, `range_ratio` default 0), a named profile (its own dataset,
    lengths and endpoint: a different value given is refused), or `custom` (a named `dataset`, required).
    """

    accelerator_type: str
    instance_type: str
    accelerator_count: int
    model: str
    vllm_version: str  # required: a point's version is part of what the report compares
    image: str | None = None
    tensor_parallel_size: int = 1
    workload: str = DEFAULT_WORKLOAD
    endpoint: str | None = None  # "completions" or "chat"; default: the profile's, else the file's backend
    dataset: str | None = None
    input_len: int | None = None
    output_len: int | None = None
    range_ratio: float | None = None
    quantization: str | None = None
    runtime: str | None = None  # the tier's (the import task sets it from accelbench.tiers)
    # The most tensor-parallel ranks the type offers, in its tier's unit (accelbench.tiers: Tier.ranks; the
    # import task sets them); None: not checked.
    max_ranks: int | None = None
    rank_unit: str = "ranks"
    started_at: datetime | None = None  # overrides the file's own date (its client's local clock)

    def __post_init__(self) -> None:
        if not isinstance(self.vllm_version, str) or not self.vllm_version.strip():
            raise ConfigError(
                "vllm_version",
                self.vllm_version,
                "required: the vLLM version that served these results (the report compares and labels "
                "points by it)",
            )
        if self.tensor_parallel_size < 1:
            raise ConfigError("tensor_parallel_size", self.tensor_parallel_size, "at least 1")
        if self.max_ranks is not None and self.tensor_parallel_size > self.max_ranks:
            raise ConfigError(
                "tensor_parallel_size",
                self.tensor_parallel_size,
                f"{self.instance_type} has {self.max_ranks} {self.rank_unit} in the catalog",
            )
        if self.endpoint is not None and self.endpoint not in ENDPOINTS:
            raise ConfigError("endpoint", self.endpoint, f"one of {', '.join(ENDPOINTS)}")
        for name in ("input_len", "output_len"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(name, value, "at least 1 token")
        if self.range_ratio is not None and not 0 <= self.range_ratio <= 1:
            raise ConfigError("range_ratio", self.range_ratio, "between 0 and 1")
        self.shape()

    def shape(self) -> dict[str, Any]:
        """The rows' workload columns (workload, dataset, endpoint, lengths, range ratio, prefix) as a
        campaign's rows of the same workload have them; `endpoint` None: the file's backend says it."""
        given = {
            "dataset": self.dataset,
            "endpoint": self.endpoint,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "range_ratio": self.range_ratio,
        }
        if self.workload in PROFILES:
            base = PROFILES[self.workload]
            for name, value in given.items():
                if value is not None and value != getattr(base, name):
                    raise ConfigError(
                        name,
                        value,
                        f"the {self.workload} workload has {name}={getattr(base, name)!r}: leave it empty, "
                        "or describe the requests as workload=fixed or custom",
                    )
            return base.model_dump(include=set(given)) | {
                "workload": base.name,
                "prefix_len": base.prefix_len or None,
            }
        if self.workload == DEFAULT_WORKLOAD:
            if self.dataset not in (None, "random"):
                raise ConfigError(
                    "dataset",
                    self.dataset,
                    "the fixed workload is random prompts: a named dataset is workload=custom",
                )
            for name in ("input_len", "output_len"):
                if given[name] is None:
                    raise ConfigError(
                        name, None, "required for workload=fixed: the tokens the random prompts asked for"
                    )
            return given | {
                "workload": self.workload,
                "dataset": "random",
                "range_ratio": self.range_ratio if self.range_ratio is not None else 0.0,
                "prefix_len": None,
            }
        if self.workload == "custom":
            if not self.dataset:
                raise ConfigError(
                    "dataset", self.dataset, "required for workload=custom: the dataset the prompts came from"
                )
            return given | {"workload": self.workload, "prefix_len": None}
        raise ConfigError("workload", self.workload, f"one of {', '.join(WORKLOADS)}")


@dataclass
class ImportReport:
    imported: list[str] = field(default_factory=list)  # lake URIs of the copied source files
    runs: int = 0
    requests: int = 0
    refused: dict[str, str] = field(default_factory=dict)  # source file -> why


class ImportRefused(AccelbenchError):
    """A file that is not a usable `vllm bench serve` result, or that contradicts what the caller stated."""


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


def _with_metadata(target: ImportTarget, raw: dict[str, Any], name: str) -> ImportTarget:
    """The target with what the file's `--metadata` says (METADATA_FIELDS): a field the caller left empty
    is filled, one it gave must agree."""
    taken: dict[str, Any] = {}
    for key, kind in METADATA_FIELDS.items():
        found = raw.get(key)
        if found is None:
            continue
        try:
            value = kind(found)
        except (TypeError, ValueError):
            raise ImportRefused(f"{name}: its metadata {key}={found!r} is not a number") from None
        stated = getattr(target, key)
        if stated is None:
            taken[key] = value
        elif stated != value:
            raise ImportRefused(f"{name}: {key}={stated!r}, but the file's metadata says {key}={found!r}")
    try:
        return dataclasses.replace(target, **taken) if taken else target
    except ConfigError as exc:
        raise ImportRefused(f"{name}: with its metadata, {exc}") from None


def _endpoint(stated: str | None, result: BenchServeResult, name: str) -> str:
    """The endpoint the requests went to: the file's backend says it; the caller's must agree."""
    backend = result.backend or result.endpoint_type
    found = BACKEND_ENDPOINTS.get(backend or "")
    if stated is not None and found is not None and stated != found:
        raise ImportRefused(
            f"{name}: endpoint={stated!r}, but the file's backend {backend!r} calls {ENDPOINTS[found][1]}"
        )
    if stated is None and found is None:
        raise ImportRefused(
            f"{name}: the file's backend {backend!r} does not say which endpoint it called: give endpoint"
        )
    return stated or str(found)


def _check_file(target: ImportTarget, shape: dict[str, Any], result: BenchServeResult, name: str) -> None:
    """Refuse a file that contradicts the caller: mean request lengths away from the stated ones (over the
    completed requests: total tokens / completed), or another model-store id than the stated model."""
    if result.completed:
        spread = max(LENGTH_TOLERANCE, shape.get("range_ratio") or 0.0)
        for key, total, hint in (
            ("input_len", result.total_input_tokens, ""),
            ("output_len", result.total_output_tokens, " (was it run without --ignore-eos?)"),
        ):
            stated = shape.get(key)
            if stated is None:
                continue
            mean = total / result.completed
            allowed = spread * stated + LENGTH_SLACK_TOKENS
            if abs(mean - stated) > allowed:
                what = key.removesuffix("_len")
                raise ImportRefused(
                    f"{name}: {key}={stated}, but its {result.completed} completed requests averaged "
                    f"{mean:.1f} {what} tokens (total_{what}_tokens / completed), more than {allowed:.0f} "
                    f"off{hint if mean < stated else ''}"
                )
    found = result.model_id
    if (
        found
        and _MODEL_STORE_ID.fullmatch(found)
        and _MODEL_STORE_ID.fullmatch(target.model)
        and found.casefold() != target.model.casefold()
    ):
        raise ImportRefused(f"{name}: model={target.model!r}, but the file benchmarked model_id={found!r}")


def _tables(
    result: BenchServeResult, raw: dict[str, Any], target: ImportTarget, ids: dict[str, Any], name: str
) -> tuple[pa.Table, pa.Table]:
    """The file's `runs` row and `requests` rows as tables of the lake's schemas."""
    target = _with_metadata(target, raw, name)
    shape = target.shape()
    shape["endpoint"] = _endpoint(shape["endpoint"], result, name)
    _check_file(target, shape, result, name)
    kind, value = _level(result)
    achieved = arrival_rate(raw | {"completed": result.completed, "duration": result.duration})
    details = all(isinstance(raw.get(k), list) for k in DETAIL_KEYS)  # saved with --save-detailed
    model = model_identity(target.model)  # a folder on this worker: named by its id, as a campaign's rows
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
        "runtime": target.runtime,
        "image": target.image,
        "model": model.model_id,
        "model_path": model.path,
        "served_model_name": result.model_id,
        "quantization": target.quantization,
        "tensor_parallel_size": target.tensor_parallel_size,
        "instance_type": target.instance_type,
        # The importer declares where the file was measured: on the instance type itself, so prices apply.
        "host_instance_type": target.instance_type,
        "measured_on_instance": True,
        "accelerator_count": target.accelerator_count,
        "execution_mode": IMPORTED_MODE,
        "burstiness": result.burstiness if kind == "rate" else None,  # as a campaign's rows: rate levels only
        **shape,
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
        runs, requests = _tables(result, raw, target, ids, name)
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
    if requests.num_rows:
        keep.add(lake.write_table("sketches", sketch_table(requests), tier, day, stem))
    keep.add(lake.write_table("runs", runs, tier, day, stem))
    _drop_other_copies(lake, stem, digest, keep)
    return ids["source_uri"], 1, requests.num_rows


def _drop_other_copies(lake: Lake, stem: str, digest: str, keep: set[str]) -> None:
    """The same file imported before under another tier or date: its old rows and copy go, so a file
    is in the lake once (new files first, then the old ones are removed: nothing is lost midway)."""
    patterns = [lake.path(t, "*", "*", f"{stem}.parquet") for t in ("runs", "requests", "sketches")]
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
