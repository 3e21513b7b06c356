"""One report: filter the lake's runs, drop retracted ones, price them, compute every table of the
registry (`accelbench.report.tables`), write out."""

from __future__ import annotations

import functools
import io
import json
import operator
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from accelbench.core.price import Price
from accelbench.decisions import Decision
from accelbench.lake.schemas import LakeRow
from accelbench.lake.store import Lake
from accelbench.report.builder import build_points
from accelbench.report.columns import label
from accelbench.report.records import Record, arrow_schema, records
from accelbench.report.retractions import Retraction, split_retracted
from accelbench.report.samples import Samples
from accelbench.report.searches import capacity_rows
from accelbench.report.slos import DEFAULT_MAX_ERROR_RATE, Slos, best_under_slos
from accelbench.report.table import Inputs, Table
from accelbench.report.tables import TABLES
from accelbench.report.trends import trend_points

HTML_NAME = "report.html"
SUMMARY_NAME = "summary.json"
FIGURES = "figures"  # the charts as static SVG, beside the page


@dataclass(frozen=True)
class ReportFilter:
    """The report DAG's params; empty lists mean everything."""

    models: list[str] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    date_from: date | None = None
    date_to: date | None = None
    region: str = "us-east-1"
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None
    e2el_p99_ms: float | None = None
    max_error_rate: float | None = DEFAULT_MAX_ERROR_RATE

    @property
    def slos(self) -> Slos:
        return Slos(self.ttft_p99_ms, self.tpot_p99_ms, self.e2el_p99_ms, self.max_error_rate)

    def keeps(self, run: LakeRow) -> bool:
        day = date.fromisoformat(run["date"]) if run.get("date") else run["started_at"].date()
        return (
            (not self.models or run["model"] in self.models)
            and (not self.tiers or run["accelerator_type"] in self.tiers)
            and (not self.versions or run["vllm_version"] in self.versions)
            and (self.date_from is None or day >= self.date_from)
            and (self.date_to is None or day <= self.date_to)
        )


def partition_filter(flt: ReportFilter, *, rows: bool = True) -> ds.Expression | None:
    """The filter as a pyarrow expression: tier and date prune partitions (directories) unread, model
    and version drop rows while reading (`rows=False`: the partitions only, for the `requests` table,
    which has no model column). `ReportFilter.keeps` still applies to what comes back."""
    parts = []
    if flt.tiers:
        parts.append(ds.field("accelerator_type").isin(flt.tiers))
    if flt.date_from:
        parts.append(ds.field("date") >= flt.date_from.isoformat())
    if flt.date_to:
        parts.append(ds.field("date") <= flt.date_to.isoformat())
    if rows and flt.models:
        parts.append(ds.field("model").isin(flt.models))
    if rows and flt.versions:
        parts.append(ds.field("vllm_version").isin(flt.versions))
    return functools.reduce(operator.and_, parts) if parts else None


def gather(
    runs: list[LakeRow],
    prices: list[Price],
    retracted: list[Retraction],
    flt: ReportFilter,
    capacities: list[LakeRow] | None = None,
    samples: Samples | None = None,
    quality: list[LakeRow] | None = None,
    costs: list[LakeRow] | None = None,
    startups: list[LakeRow] | None = None,
    decisions: Sequence[Decision] = (),
    previous: Sequence[Record] = (),
) -> Inputs:
    """What every table is computed from: the runs `flt` keeps, less the retracted ones (listed apart),
    priced into typed points by one builder (`accelbench.report.builder.build_points`); the load searches'
    `capacities` priced at their capacity from their probes' runs, naming those points for the capacity
    planner; each point's three-valued verdict against the SLOs (`accelbench.report.slos.slo_judgement`);
    and the best level under the SLOs per configuration.
    `samples`: the kept runs' request samples (`read_samples`), from which the latency percentiles'
    intervals pool the requests; without them those intervals come from the repeats alone. `quality`: the
    lake's quality rows (a quantization matrix's configurations against their reference), on the points of
    their configurations (`accelbench.report.quality.grade`). `costs`: the lake's costs rows (what each
    server of a campaign cost, `accelbench.lake.costs`); `startups`: the lake's startups rows, each point's
    median start-up from them (`accelbench.report.startups`); `decisions`: the owners' answers to
    regressions (the catalog's), those of the filter's models kept; each series' best level campaign by
    campaign for the trends (`accelbench.report.trends`); `previous`: the previous report of the same
    filter's answer cards (`accelbench.report.service.previous_cards`), which the cards compare with."""
    # A recheck (`runs.recheck`) is not one of its level's repeats: what it found is on its run's rows
    # (`host_drift`).
    chosen = [r for r in runs if flt.keeps(r) and not r.get("recheck")]
    kept, gone = split_retracted(chosen, retracted)
    searched = capacity_rows([c for c in capacities or [] if flt.keeps(c)], kept, prices, flt.region)
    graded = [q for q in quality or [] if flt.keeps(q)]
    points = build_points(
        kept,
        prices,
        flt.region,
        flt.slos,
        samples,
        searched=searched,
        quality=graded,
        startups=startups or [],
    )
    best = best_under_slos(points, flt.slos)
    spent = [c for c in costs or [] if flt.keeps(c)]
    answered = [d for d in decisions if not flt.models or d.model in flt.models]
    trends = trend_points(kept, prices, flt.region, flt.slos, samples)
    return Inputs(
        kept,
        gone,
        searched,
        points,
        best,
        samples or Samples.EMPTY,
        graded,
        spent,
        answered,
        list(previous),
        trends,
    )


def build_report(
    runs: list[LakeRow],
    prices: list[Price],
    retracted: list[Retraction],
    flt: ReportFilter,
    capacities: list[LakeRow] | None = None,
    samples: Samples | None = None,
    quality: list[LakeRow] | None = None,
    costs: list[LakeRow] | None = None,
    startups: list[LakeRow] | None = None,
    decisions: Sequence[Decision] = (),
    previous: Sequence[Record] = (),
    *,
    registry: Sequence[Table] = TABLES,
) -> dict[str, list[Record]]:
    """The report's tables by name, in the registry's order (`accelbench.report.tables`), from the lake's
    runs, `capacities` (the load searches' rows) and `samples` (the runs' requests): see `gather`. Each
    table's typed rows as the files hold them (`accelbench.report.records`)."""
    inputs = gather(
        runs, prices, retracted, flt, capacities, samples, quality, costs, startups, decisions, previous
    )
    return {table.name: records(table.compute(inputs)) for table in registry}


def summary_filter(flt: ReportFilter) -> dict[str, Any]:  # a JSON document: summary.json's "filter"
    """The filter as summary.json holds it (dates as text): reports of one filter are compared by it."""
    return {k: (str(v) if isinstance(v, date) else v) for k, v in asdict(flt).items()}


def report_id(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def _flat(arrow: pa.Table) -> pa.Table:
    """CSV holds no lists: a list column (a point's `run_ids`) becomes its items joined by "; "."""
    for i, f in enumerate(arrow.schema):
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type):
            joined = pc.binary_join(arrow.column(i).cast(pa.list_(pa.string())), "; ")
            arrow = arrow.set_column(i, f.name, joined)
    return arrow


def _empty(t: Table) -> pa.Table:
    """A table without rows, with its row type's columns (`accelbench.report.records.arrow_schema`)."""
    return arrow_schema(t.row).empty_table() if t.row is not None else pa.table({})


def write_report(
    lake: Lake,
    rid: str,
    tables: dict[str, list[Record]],
    flt: ReportFilter,
    runs_read: int,
    generated_at: datetime | None = None,
    *,
    registry: Sequence[Table] = TABLES,
) -> dict[str, str]:
    """Under reports/<id>/: each table as Parquet (machine column names) and CSV (human headers), each
    chart as a static SVG (figures/<chart id>.svg), the HTML report, and summary.json (what the
    Benchmarks view lists). The HTML and the summary come
    last, so a listed report has all its files. Returns the written URIs by file name.
    """
    from accelbench.report.charts import chart_svgs  # vl-convert and jinja2 only when HTML is made
    from accelbench.report.html import render_html

    generated_at = generated_at or datetime.now(UTC)
    written = {}
    for t in registry:
        rows = tables.get(t.name)
        arrow = pa.Table.from_pylist(rows) if rows else _empty(t)
        parquet, csv = io.BytesIO(), io.BytesIO()
        pq.write_table(arrow, parquet, compression="zstd")
        pacsv.write_csv(_flat(arrow).rename_columns([label(c) for c in arrow.column_names]), csv)
        for name, buf in ((t.parquet, parquet), (t.csv, csv)):
            written[name] = lake.uri_of(lake.put_bytes(buf.getvalue(), "reports", rid, name))
    for name, svg in chart_svgs(tables, flt).items():  # for documents: figures/<chart id>.svg
        path = lake.put_bytes(svg.encode(), "reports", rid, FIGURES, f"{name}.svg")
        written[f"{FIGURES}/{name}.svg"] = lake.uri_of(path)
    html = render_html(rid, tables, flt, runs_read, generated_at, registry=registry)
    written[HTML_NAME] = lake.uri_of(lake.put_bytes(html.encode(), "reports", rid, HTML_NAME))
    summary = {
        "report_id": rid,
        "generated_at": generated_at.isoformat(),
        "filter": summary_filter(flt),
        "runs_read": runs_read,
        "rows": {t.name: len(tables.get(t.name) or []) for t in registry},
    }
    written[SUMMARY_NAME] = lake.uri_of(
        lake.put_bytes(json.dumps(summary, indent=1).encode(), "reports", rid, SUMMARY_NAME)
    )
    return written
