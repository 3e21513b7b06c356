"""The cross-tier report as one library call: a filter from the report's params, the lake's tables and the
catalog's prices, retractions and decisions read through it, the report built and written, its headline
logged (`accelbench.report.build` does the work; the report DAG's task and the regression gate call this)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from accelbench.catalog.db import CatalogOpener
from accelbench.catalog.decisions import decisions
from accelbench.config import Settings
from accelbench.core.sketches import SummaryOnly
from accelbench.core.slos import DEFAULT_MAX_ERROR_RATE
from accelbench.lake.schemas import MEASURED_STATUSES
from accelbench.lake.store import Lake
from accelbench.report import tables as registry
from accelbench.report.build import (
    HTML_NAME,
    ReportFilter,
    build_report,
    partition_filter,
    report_id,
    summary_filter,
    write_report,
)
from accelbench.report.listing import NoSuchReport, list_reports, report_file
from accelbench.report.records import Record
from accelbench.report.retractions import split_retracted
from accelbench.report.samples import alone, read_samples
from accelbench.report.sources import price_history, retractions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WrittenReport:
    """A written report: its id, its HTML page, every file written (name -> URI), each table's row count, and
    what changed on its answer cards since the previous report of the same filter (one line per card)."""

    report_id: str
    html: str
    files: dict[str, str]
    rows: dict[str, int]
    changes: tuple[str, ...] = ()

    def xcom(self) -> dict[str, Any]:  # a JSON document: XCom
        """What the report task returns: id, page, files, what changed, then each table's row count."""
        found = {"report_id": self.report_id, "html": self.html, "files": self.files}
        return found | {"changes": list(self.changes)} | self.rows


def _day(value: str | None) -> date | None:
    return date.fromisoformat(value) if value else None


def report_filter(params: Mapping[str, Any]) -> ReportFilter:
    """The report DAG's params as a filter; no region: the first of ACCELBENCH_REGIONS."""
    slos = params.get("slos") or {}
    return ReportFilter(
        models=list(params.get("models") or []),
        tiers=list(params.get("tiers") or []),
        versions=list(params.get("versions") or []),
        date_from=_day(params.get("date_from")),
        date_to=_day(params.get("date_to")),
        region=params.get("region") or Settings.from_env().aws.regions[0],
        ttft_p99_ms=slos.get("ttft_p99_ms"),
        tpot_p99_ms=slos.get("tpot_p99_ms"),
        e2el_p99_ms=slos.get("e2el_p99_ms"),
        max_error_rate=params.get("max_error_rate", DEFAULT_MAX_ERROR_RATE),
    )


def cross_tier_report(
    params: Mapping[str, Any], catalog: CatalogOpener, lake: Callable[[], Lake] = Lake.from_env
) -> WrittenReport:
    """Build and write the report of `params` (`report_filter`) from the lake and the catalog; log its
    counts, its headline and where it was written."""
    flt = report_filter(params)
    opened = lake()
    runs = opened.read("runs", where=partition_filter(flt)).to_pylist()
    capacities = opened.read("capacities", where=partition_filter(flt)).to_pylist()
    quality = opened.read("quality", where=partition_filter(flt)).to_pylist()
    costs = opened.read("costs", where=partition_filter(flt)).to_pylist()
    startups = opened.read("startups", where=partition_filter(flt)).to_pylist()
    with catalog() as engine:
        prices = price_history(engine, {r["instance_type"] for r in runs})
        retracted = retractions(engine)
        answered = decisions(engine)
    # The latency distributions of the measured runs the filter keeps (their percentiles' intervals come
    # from them), and the requests of their trace replays (the replays table plots them request by request).
    measured = {r["run_id"] for r in runs if r.get("status") in MEASURED_STATUSES and flt.keeps(r)}
    replays = {r["run_id"] for r in runs if r["run_id"] in measured and r.get("trace_sha256")}
    # Whole distributions only where a point has one repeat (issue 50: the rest, their percentiles alone),
    # among the runs the points are made of (build_report: neither rechecks nor retracted runs).
    points = [r for r in runs if r["run_id"] in measured and not r.get("recheck")]
    repeats, _ = split_retracted(points, retracted)
    where = partition_filter(flt, rows=False)
    samples = read_samples(opened, measured, where=where, replays=replays, whole=alone(repeats) | replays)
    before = previous_cards(opened, flt)
    inputs = (prices, retracted, flt, capacities)
    try:
        tables = build_report(runs, *inputs, samples, quality, costs, startups, answered, before)
    except SummaryOnly as exc:  # a table needed more than the percentiles of a run: read them all whole
        log.warning("the report needs whole latency distributions (%s); reading every run's", exc)
        samples = read_samples(opened, measured, where=where, replays=replays)
        tables = build_report(runs, *inputs, samples, quality, costs, startups, answered, before)
    rid = report_id()
    written = write_report(opened, rid, tables, flt, len(runs))
    _log_report(rid, tables, written)
    changed = tuple(c["change_text"] for c in tables[registry.cards.TABLE.name] if c.get("change_text"))
    for line in changed:
        log.info("report %s changed an answer: %s", rid, line)
    rows = {name: len(rows) for name, rows in tables.items()}
    return WrittenReport(rid, written[HTML_NAME], written, rows, changed)


def previous_cards(lake: Lake, flt: ReportFilter) -> list[Record]:
    """The answer cards of the newest report in `lake` made with the same filter (each with its `report_id`),
    which the new report's cards compare with; none: no such report, or one written before the cards."""
    wanted = summary_filter(flt)
    for entry in list_reports(lake):  # newest first
        if entry.summary.get("filter") != wanted:
            continue
        try:
            data = report_file(lake, entry.report_id, registry.cards.TABLE.parquet)
        except NoSuchReport:
            log.info("report %s has no answer cards to compare with", entry.report_id)
            return []
        rows = pq.read_table(pa.BufferReader(data)).to_pylist()
        log.info("comparing the answer cards with report %s (the same filter)", entry.report_id)
        return [r | {"report_id": entry.report_id} for r in rows]
    return []


def _log_report(rid: str, tables: Mapping[str, list[Record]], written: Mapping[str, str]) -> None:
    lines = []
    for h in tables[registry.headline.TABLE.name]:
        cost = h.get("on_demand_usd_per_1m_output_tokens")
        shown = f", {cost:.4f} USD per 1M output tokens on-demand" if cost is not None else ""
        what = f"{h['configuration']} at {h['level']}{shown}" if h.get("configuration") else ""
        host = f" [{h['host']}]" if h.get("host") not in (None, "instance") else ""
        lines.append(f"{h['model_short']}, {h['workload']}: {h['answer']}{': ' if what else ''}{what}{host}")
    log.info(
        "report %s: %d points, %d best under SLOs on the instance, %d local, %d on the frontier, "
        "%d version deltas, %d retracted runs\n%s",
        rid,
        *(
            len(tables[counted.TABLE.name])
            for counted in (
                registry.points,
                registry.best_under_slo,
                registry.local_results,
                registry.frontier,
                registry.version_deltas,
                registry.retracted,
            )
        ),
        "\n".join(lines),
    )
    log.info("report files: %s", ", ".join(sorted(written.values())))
    log.info("HTML report: %s", written[HTML_NAME])
