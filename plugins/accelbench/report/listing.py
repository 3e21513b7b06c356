"""The reports in the lake's reports/ area: what the Benchmarks view lists and serves.

A report counts once its summary.json exists (written last). Ids and file names are checked against
fixed patterns before any path is built, so a request cannot reach outside reports/.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, cast

from accelbench.lake.store import Lake
from accelbench.report.build import FIGURES, HTML_NAME, SUMMARY_NAME
from accelbench.report.charts import CHARTS
from accelbench.report.tables import TABLES

REPORT_ID = re.compile(r"\d{8}T\d{6}Z")  # fullmatch only
SERVED_FILES = frozenset(
    {HTML_NAME, SUMMARY_NAME}
    | {name for t in TABLES for name in t.files}
    | {f"{FIGURES}/{chart}.svg" for chart in CHARTS}  # the charts as static SVG
)


class NoSuchReport(LookupError):
    pass


@dataclass(frozen=True)
class ReportEntry:
    report_id: str
    summary: dict[str, Any]  # summary.json as written (`accelbench.report.build.write_report`)

    @property
    def filters(self) -> str:
        """The filters that narrowed the report, in words ("all runs" when none did)."""
        shown = []
        for key, value in self.summary.get("filter", {}).items():
            if value not in (None, [], ""):
                shown.append(f"{key}={', '.join(value) if isinstance(value, list) else value}")
        return "; ".join(shown) or "all runs"


def list_reports(lake: Lake) -> list[ReportEntry]:
    """Newest first; folders without a readable summary (being written, or foreign) are left out."""
    try:  # no exists(): on S3 that is a HEAD of the key "reports", which a reports/-only role may not do
        folders = lake.fs.ls(lake.path("reports"), detail=False)
    except FileNotFoundError:
        return []
    entries = []
    for folder in folders:
        rid = folder.rstrip("/").rsplit("/", 1)[-1]
        if not REPORT_ID.fullmatch(rid):
            continue
        try:
            summary = json.loads(lake.fs.cat_file(f"{folder.rstrip('/')}/{SUMMARY_NAME}"))
        except (FileNotFoundError, json.JSONDecodeError):
            continue
        entries.append(ReportEntry(rid, summary))
    return sorted(entries, key=lambda e: e.report_id, reverse=True)


def report_file(lake: Lake, rid: str, name: str = HTML_NAME) -> bytes:
    if not REPORT_ID.fullmatch(rid) or name not in SERVED_FILES:
        raise NoSuchReport(f"{rid}/{name}")
    try:
        return cast(bytes, lake.fs.cat_file(lake.path("reports", rid, name)))  # fsspec is untyped
    except (FileNotFoundError, PermissionError):  # S3 answers 403 for a missing key without ListBucket
        raise NoSuchReport(f"{rid}/{name}") from None
