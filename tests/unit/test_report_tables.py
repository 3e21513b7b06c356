"""The report's tables as one registry: each table said once, and a new table is one module's worth of
code that build, the files, the summary and the page pick up without another edit."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from typing import Any

import pyarrow.parquet as pq
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report, write_report
from accelbench.report.columns import LABELS, label
from accelbench.report.html import render_html
from accelbench.report.listing import SERVED_FILES
from accelbench.report.table import Inputs, Section, Table
from accelbench.report.tables import TABLES

from tests.support.report_data import PRICES, RUNS

WHEN = datetime(2026, 11, 30, 12, tzinfo=UTC)
FLT = ReportFilter(ttft_p99_ms=2000, tpot_p99_ms=50)


def _runs() -> list[dict[str, Any]]:
    return [r | {"run_id": f"r{i}"} for i, r in enumerate(RUNS)]


def test_each_table_is_named_once_and_has_its_own_files_section_and_columns() -> None:
    names = [t.name for t in TABLES]
    assert len(set(names)) == len(names)
    assert len({t.anchor for t in TABLES}) == len(TABLES)
    assert len({t.section.table_id for t in TABLES}) == len(TABLES)
    assert {f for t in TABLES for f in t.files} == {f"{n}.{s}" for n in names for s in ("parquet", "csv")}
    assert {f for t in TABLES for f in t.files} <= SERVED_FILES
    for t in TABLES:  # every HTML column has a heading of its own, not the fallback from its name
        unnamed = [c for c in t.columns if c not in LABELS and label(c) == c.replace("_", " ").capitalize()]
        assert not unnamed, (t.name, unnamed)


def test_a_typed_table_writes_its_row_types_columns_and_shows_some_of_them() -> None:
    """A table with a row type (`Table.row`): its files' columns are the type's (an interval as three), in
    the type's order, and its HTML columns are among them; the points, the answer and the cross-tier
    tables are typed."""
    from accelbench.report.records import columns

    typed = {t.name: t for t in TABLES if t.row is not None}
    assert {"points", "headline", "best_under_slo", "cross_tier", "frontier", "capacities"} <= set(typed)
    tables = build_report(_runs(), PRICES, [], FLT)
    for name, t in typed.items():
        assert t.row is not None
        shown = set(columns(t.row))
        assert set(t.columns) <= shown, (name, set(t.columns) - shown)
        for row in tables[name]:
            assert tuple(row) == columns(t.row), name
    assert all(tables[name] for name in ("points", "headline", "best_under_slo", "frontier"))


def test_an_empty_table_writes_its_row_types_columns(tmp_path) -> None:
    """A table without rows still writes its columns (Parquet and CSV): a reader finds them before the
    first row, and an empty version-delta table reads like a full one."""
    from accelbench.report.records import columns

    tables = build_report(_runs(), PRICES, [], FLT)
    empty = [t for t in TABLES if not tables[t.name]]
    assert {"version_deltas", "capacities", "retracted"} <= {t.name for t in empty}
    written = write_report(Lake(str(tmp_path / "lake")), "rid", tables, FLT, len(RUNS), WHEN)
    for t in empty:
        assert t.row is not None
        parquet = pq.read_table(io.BytesIO(Lake(str(tmp_path / "lake")).fs.cat_file(written[t.parquet])))
        assert (parquet.num_rows, tuple(parquet.column_names)) == (0, columns(t.row)), t.name
        text = Lake(str(tmp_path / "lake")).fs.cat_file(written[t.csv]).decode()
        assert next(csv.reader(io.StringIO(text))) == [label(c) for c in columns(t.row)], t.name


def test_build_and_page_follow_the_registry_order() -> None:
    tables = build_report(_runs(), PRICES, [], FLT)
    assert list(tables) == [t.name for t in TABLES]
    html = render_html("20261130T120000Z", tables, FLT, len(RUNS), WHEN)
    shown = [t.anchor for t in TABLES if tables[t.name]]
    at = [html.index(f'id="{anchor}"') for anchor in shown]
    assert at == sorted(at), shown
    assert html.index('id="planner"') > html.index('id="best"')  # after the capacity table's place


def _busiest(inputs: Inputs) -> list[dict[str, Any]]:
    """A toy table: per instance type, the point with the most output tokens/s."""
    top: dict[str, float] = {}
    for p in inputs.points:
        out = p.output_throughput.estimate or 0.0
        if out > top.get(p.instance_type or "", -1):
            top[p.instance_type or ""] = out
    return [{"instance_type": k, "output_throughput": v} for k, v in sorted(top.items())]


TOY = Table(
    name="busiest",
    compute=_busiest,
    columns=("instance_type", "output_throughput"),
    section=Section(
        heading="Busiest level per instance type",
        table_id="busiest-table",
        text="<p>Per instance type, {{ rows | length }} rows: the level with the most output tokens/s.</p>",
    ),
)


def test_a_new_table_is_one_entry_in_the_registry(tmp_path) -> None:
    registry = (*TABLES[:2], TOY, *TABLES[2:])  # right after the answer cards and the headline
    tables = build_report(_runs(), PRICES, [], FLT, registry=registry)
    assert tables["busiest"] == [
        {"instance_type": "g6e.xlarge", "output_throughput": 3600},
        {"instance_type": "m8g.xlarge", "output_throughput": 300},
        {"instance_type": "r8g.large", "output_throughput": 50},
    ]
    lake = Lake(str(tmp_path / "lake"))
    written = write_report(lake, "20261130T120000Z", tables, FLT, len(RUNS), WHEN, registry=registry)
    parquet = pq.read_table(lake.fs.open(written["busiest.parquet"]))
    assert parquet.column("output_throughput").to_pylist() == [3600, 300, 50]
    assert (
        lake.fs.cat_file(written["busiest.csv"]).decode().splitlines()[0]
        == '"Instance type","Output tokens per s (mean)"'
    )
    summary = json.loads(lake.fs.cat_file(written["summary.json"]))
    assert summary["rows"]["busiest"] == 3 and list(summary["rows"])[:3] == ["cards", "headline", "busiest"]
    html = lake.fs.cat_file(written["report.html"]).decode()
    assert '<h2 id="busiest">Busiest level per instance type</h2>' in html
    assert "Per instance type, 3 rows" in html and 'id="busiest-table"' in html
    assert html.index('id="answer"') < html.index('id="busiest"') < html.index('id="cross-tier"')
    assert re.search(r'<td class="">3600</td>', html)
