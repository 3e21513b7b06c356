"""The report's prefix-caching table (issue 19): points that differ only in the prefix-caching flag are
paired, their TTFT compared with the version deltas' noise rule; everything else stays unpaired."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report, write_report
from accelbench.report.html import render_html
from accelbench.report.points import level_points
from accelbench.report.tables.prefix_caching import prefix_caching, prefix_caching_flag

from tests.support.report_data import PRICES, run_row

ON, OFF = "--enforce-eager --enable-prefix-caching", "--enforce-eager --no-enable-prefix-caching"
SHARED_PREFIX = {
    "workload": "shared-prefix",
    "dataset": "prefix_repetition",
    "input_len": 1088,
    "output_len": 64,
    "prefix_len": 1024,
    "execution_mode": "local",
    "measured_on_instance": False,
    "host_architecture": "aarch64",
    "host_cpu_model": "Neoverse-V2",
    "host_vcpus": 4,
}


def _runs(engine_args: str, p50s: tuple[float, ...], p99s: tuple[float, ...], **kw) -> list[dict]:
    """One point's repeats on m8g.xlarge at concurrency 1: TTFT p50 and p99 per repeat."""
    return [
        run_row("m8g.xlarge", "cpu", 1, i, 100, 150, p99, 20, p50_ttft_ms=p50, engine_args=engine_args)
        | SHARED_PREFIX
        | kw
        for i, (p50, p99) in enumerate(zip(p50s, p99s, strict=True))
    ]


def _pairs(runs: list[dict]) -> list[dict]:
    return prefix_caching(level_points(runs, PRICES, "us-east-1"))


def test_the_flag_is_read_as_vllm_reads_it() -> None:
    assert prefix_caching_flag("--enforce-eager --enable-prefix-caching") == (True, "--enforce-eager")
    assert prefix_caching_flag("--no-enable-prefix-caching") == (False, "")
    assert prefix_caching_flag("--enable_prefix_caching --max-num-seqs=4") == (True, "--max-num-seqs=4")
    # The last flag wins, as in argparse; neither flag is the engine's default: no state.
    assert prefix_caching_flag("--enable-prefix-caching --no-enable-prefix-caching") == (False, "")
    assert prefix_caching_flag("--enforce-eager") == (None, "--enforce-eager")
    assert prefix_caching_flag(None) == prefix_caching_flag("") == (None, "")


def test_a_pair_shows_both_ttfts_and_the_change_beyond_noise() -> None:
    (pair,) = _pairs([*_runs(ON, (40, 60), (100, 120)), *_runs(OFF, (250, 270), (300, 340))])
    assert (pair["p50_ttft_ms_on"], pair["p50_ttft_ms_off"]) == (50, 260)  # medians over the repeats
    assert (pair["p99_ttft_ms_on"], pair["p99_ttft_ms_off"]) == (110, 320)
    # p50: 260 -> 50 ms is -80.8%; noise limit = 2 x the larger CV, stdev(40, 60) / 50 = 28.3%: 56.6%.
    assert pair["p50_ttft_ms_change"] == pytest.approx((50 - 260) / 260)
    assert pair["p50_ttft_ms_noise_limit"] == pytest.approx(2 * 14.1421356 / 50)
    assert pair["p50_ttft_ms_verdict"] == "improvement"
    # p99: 320 -> 110 ms is -65.6%; limit 2 x stdev(100, 120) / 110 = 25.7%.
    assert pair["p99_ttft_ms_change"] == pytest.approx((110 - 320) / 320)
    assert pair["p99_ttft_ms_noise_limit"] == pytest.approx(2 * 14.1421356 / 110)
    assert pair["p99_ttft_ms_verdict"] == "improvement"
    # What was compared: the arguments both share, the workload, the host and the level.
    assert pair["engine_args"] == "--enforce-eager"
    assert pair["configuration"] == "m8g.xlarge · vLLM 0.32.0 · TP1 · --enforce-eager"
    assert pair["workload"] == "shared-prefix: prefix_repetition 1088→64, 1024-token shared prefix"
    assert pair["host"] == "local: aarch64 Neoverse-V2, 4 vCPU" and pair["level"] == "concurrency 1"
    assert (pair["model_short"], pair["repeats_on"], pair["repeats_off"]) == ("model", 2, 2)
    assert pair["point_id_on"] != pair["point_id_off"]


def test_changes_within_noise_and_a_slower_cache_are_called_so() -> None:
    # One repeat each: no CV, so the 5% floor: p50 100 -> 103 ms (+3%) is noise, p99 100 -> 130 is not.
    (pair,) = _pairs([*_runs(ON, (103,), (130,)), *_runs(OFF, (100,), (100,))])
    assert pair["p50_ttft_ms_noise_limit"] == 0.05 and pair["p50_ttft_ms_verdict"] == "within noise"
    assert pair["p99_ttft_ms_change"] == pytest.approx(0.3) and pair["p99_ttft_ms_verdict"] == "regression"
    # A p50 the runs did not record: blank change and verdict, never a made-up zero.
    (blank,) = _pairs([*_runs(ON, (1,), (130,), p50_ttft_ms=None), *_runs(OFF, (100,), (100,))])
    assert blank["p50_ttft_ms_on"] is None
    assert blank["p50_ttft_ms_change"] is blank["p50_ttft_ms_verdict"] is None
    assert blank["p99_ttft_ms_verdict"] == "regression"


def test_only_points_identical_but_for_the_flag_pair() -> None:
    on = _runs(ON, (50,), (100,))
    # The engine's default (neither flag) is not "off": nothing to pair with.
    assert _pairs([*on, *_runs("--enforce-eager", (250,), (300,))]) == []
    # Another engine argument, level, workload, host or vLLM version: a different point, no pair.
    for other in (
        _runs("--no-enable-prefix-caching", (250,), (300,)),
        _runs(OFF, (250,), (300,), level_value=2.0),
        _runs(OFF, (250,), (300,), prefix_len=512),
        _runs(OFF, (250,), (300,), host_cpu_model="Graviton4"),
        _runs(OFF, (250,), (300,), vllm_version="0.31.0"),
    ):
        assert _pairs([*on, *other]) == []
    # Two levels of the same two configurations: two pairs, each at its own level.
    both = [*on, *_runs(OFF, (250,), (300,))]
    both += [r | {"level_value": 4.0} for r in both]
    assert [p["level"] for p in _pairs(both)] == ["concurrency 1", "concurrency 4"]


def test_the_page_and_the_files_have_the_table_only_when_a_pair_exists(tmp_path) -> None:
    runs = [
        r | {"run_id": f"r{i}", "date": "2026-11-10"}
        for i, r in enumerate([*_runs(ON, (40, 60), (100, 120)), *_runs(OFF, (250, 270), (300, 340))])
    ]
    flt, when = ReportFilter(), datetime(2026, 11, 30, tzinfo=UTC)
    tables = build_report(runs, PRICES, [], flt)
    assert len(tables["prefix_caching"]) == 1 and len(tables["points"]) == 2
    page = render_html("r", tables, flt, len(runs), when)
    assert "Prefix caching: TTFT with and without" in page and 'id="prefix-caching-table"' in page
    assert "is not paired" in page  # says what happens to the engine's default
    table = page[
        page.index('id="prefix-caching-table"') : page.index("</table>", page.index("prefix-caching-"))
    ]
    for cell in ("p50 TTFT, prefix caching on, ms (median)", ">50<", ">260<", "-80.8%", "improvement"):
        assert cell in table, cell
    # Parquet keeps the machine names, the CSV the human ones, like every table.
    lake = Lake(str(tmp_path / "lake"))
    written = write_report(lake, "rid", tables, flt, len(runs), when)
    (row,) = pq.read_table(lake.fs.open(written["prefix_caching.parquet"], "rb")).to_pylist()
    assert (row["p50_ttft_ms_on"], row["p50_ttft_ms_off"], row["p50_ttft_ms_verdict"]) == (
        50,
        260,
        "improvement",
    )
    with lake.fs.open(written["prefix_caching.csv"], "rb") as f:
        (line,) = csv.DictReader(io.TextIOWrapper(f, encoding="utf-8"))
    assert line["p99 TTFT, prefix caching off, ms (median)"] == "320"
    assert line["p99 TTFT, ms: verdict"] == "improvement"
    # Without a pair (only the on point): no section on the page, an empty table in the files.
    alone = build_report(runs[:2], PRICES, [], flt)
    assert alone["prefix_caching"] == []
    assert "Prefix caching: TTFT with and without" not in render_html("r", alone, flt, 2, when)
