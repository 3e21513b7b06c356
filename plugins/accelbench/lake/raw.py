"""The lake's raw/ area: one folder per spec of the load generator's evidence, as it wrote it.

Written by whoever ran the spec (the benchmark pod, or the local executor); read by the ingest
task, which turns it into `runs`/`requests` rows. The envelope is copied last, so a folder with an
envelope is complete.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.core.evidence import Envelope, RunSummary
from accelbench.core.spec import BenchmarkSpec
from accelbench.errors import AccelbenchError
from accelbench.lake.store import Lake, safe_name

ENVELOPE = "envelope.json"
EXECUTION = "execution.json"  # how and where the spec ran: mode, node, pinning, server start-up

Reader = Callable[[str], dict[str, Any] | None]


@dataclass(frozen=True)
class RawLocation:
    """Where one spec's raw evidence lives in the lake: derived from ids, so a retry hits the same place."""

    accelerator_type: str
    date: str
    campaign_id: str
    spec_id: str

    @property
    def parts(self) -> tuple[str, ...]:
        return (
            "raw",
            f"accelerator_type={self.accelerator_type}",
            f"date={self.date}",
            safe_name(self.campaign_id),
            self.spec_id,
        )

    @property
    def stem(self) -> str:
        """The Parquet file name of this spec in `runs/` and `requests/`."""
        return f"{safe_name(self.campaign_id)}--{self.spec_id}"

    def reader(self, lake: Lake) -> Reader:
        def read(name: str) -> dict[str, Any] | None:
            path = lake.path(*self.parts, name)
            if not lake.fs.exists(path):
                return None
            return _parse(lake.fs.cat_file(path), lake.uri_of(path))

        return read


class RawEvidenceError(AccelbenchError):
    """A raw file exists but is not the JSON document the load generator writes."""


def _parse(data: bytes | str, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise RawEvidenceError(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise RawEvidenceError(f"{where}: a JSON {type(doc).__name__}, not an object")
    return doc


def dir_reader(spec_dir: Path) -> Reader:
    """The same reader over the executor's local folder (before or without a lake upload)."""

    def read(name: str) -> dict[str, Any] | None:
        path = spec_dir / name
        return _parse(path.read_bytes(), str(path)) if path.is_file() else None

    return read


def write_execution(spec_dir: Path, **facts: Any) -> None:
    """How and where the spec ran, kept beside the envelope (mode, node, pinning, server start-up)."""
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / EXECUTION).write_text(json.dumps(facts, indent=1))


def upload_raw(lake: Lake, spec_dir: Path, where: RawLocation) -> list[str]:
    """Copy the raw evidence (bench JSON, logs, envelope last) to the lake; returns the lake paths."""
    files = sorted(p for p in spec_dir.iterdir() if p.suffix in {".json", ".log"} and p.name != ENVELOPE)
    if (spec_dir / ENVELOPE).is_file():
        files.append(spec_dir / ENVELOPE)  # last: its presence means the rest is there
    return [lake.put_raw(path, *where.parts[1:], path.name) for path in files]


def complete_run(lake: Lake, spec: BenchmarkSpec, date: str) -> RunSummary | None:
    """The summary of an earlier attempt that measured `spec` completely (every level, no failure), its
    envelope in the lake's raw/ area (uploaded last: its presence means the rest is there); None when there
    is none. A retry of a server's workloads measures only the specs without one (issue 49)."""
    where = RawLocation(spec.server.accelerator_type, date, spec.campaign_id, spec.spec_id)
    try:
        doc = where.reader(lake)(ENVELOPE)
    except RawEvidenceError:
        return None
    if doc is None or doc.get("failure") is not None or not doc.get("attempt") or not doc.get("levels"):
        return None
    try:
        summary = RunSummary.of(Envelope.model_validate(doc))
    except ValueError:  # another suite version's envelope: measured again
        return None
    summary.raw = lake.uri_of(lake.path(*where.parts))
    return summary
