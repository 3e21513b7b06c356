"""The cross-tier report as one library call: a filter from the report's params, the lake's tables and the
catalog's prices, retractions and decisions read through it, the report built and written, its headline
logged (`accelbench.report.build` does the work; the report DAG's task and the regression gate call this)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from accelbench.catalog.db import CatalogOpener
from accelbench.catalog.decisions import decisions
from accelbench.config import Settings
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
    write_report,
)
from accelbench.report.records import Record
from accelbench.report.samples import read_samples
from accelbench.report.sources import price_history, retractions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WrittenReport:
    """A written report: its id, its HTML page, every file written (name -> URI), each table's row count."""

    report_id: str
    html: str
    files: dict[str, str]
    rows: dict[str, int]

    def xcom(self) -> dict[str, Any]:  # a JSON document: XCom
        """What the report task returns: id, page, files, then each table's row count."""
        return {"report_id": self.report_id, "html": self.html, "files": self.files} | self.rows


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
    # The requests of the measured runs the filter keeps: the latency percentiles' intervals pool them.
    measured = {r["run_id"] for r in runs if r.get("status") in MEASURED_STATUSES and flt.keeps(r)}
    samples = read_samples(opened, measured, where=partition_filter(flt, rows=False))
    tables = build_report(
        runs, prices, retracted, flt, capacities, samples, quality, costs, startups, answered
    )
    rid = report_id()
    written = write_report(opened, rid, tables, flt, len(runs))
    _log_report(rid, tables, written)
    return WrittenReport(rid, written[HTML_NAME], written, {name: len(rows) for name, rows in tables.items()})


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
