"""The report's prefix-caching table (issue 19): points that differ only in the prefix-caching flag are
paired, their TTFT change tested as the version deltas' are (issue 29); everything else stays unpaired."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import numpy as np
import pyarrow.parquet as pq
import pytest
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report, write_report
from accelbench.report.html import render_html
from accelbench.report.points import level_points
from accelbench.report.records import records
from accelbench.report.samples import Samples
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
        run_row(
            "m8g.xlarge",
            "cpu",
            1,
            i,
            100,
            150,
            p99,
            20,
            p50_ttft_ms=p50,
            engine_args=engine_args,
            run_id=f"{engine_args}-{kw.get('level_value', 1)}-{i}",
        )
        | SHARED_PREFIX
        | kw
        for i, (p50, p99) in enumerate(zip(p50s, p99s, strict=True))
    ]


def _pairs(runs: list[dict], samples: Samples = Samples.EMPTY) -> list[dict]:
    return records(prefix_caching(level_points(runs, PRICES, "us-east-1"), runs, samples))


def test_the_flag_is_read_as_vllm_reads_it() -> None:
    assert prefix_caching_flag("--enforce-eager --enable-prefix-caching") == (True, "--enforce-eager")
    assert prefix_caching_flag("--no-enable-prefix-caching") == (False, "")
    assert prefix_caching_flag("--enable_prefix_caching --max-num-seqs=4") == (True, "--max-num-seqs=4")
    # The last flag wins, as in argparse; neither flag is the engine's default: no state.
    assert prefix_caching_flag("--enable-prefix-caching --no-enable-prefix-caching") == (False, "")
    assert prefix_caching_flag("--enforce-eager") == (None, "--enforce-eager")
    assert prefix_caching_flag(None) == prefix_caching_flag("") == (None, "")


def test_a_pair_shows_both_ttfts_and_the_tested_change() -> None:
    runs = [*_runs(ON, (40, 60), (100, 120)), *_runs(OFF, (250, 270), (300, 340))]
    (pair,) = _pairs(runs)
    on, off = sorted(records(level_points(runs, PRICES, "us-east-1")), key=lambda p: p["p50_ttft_ms"])
    for metric in ("p50_ttft_ms", "p99_ttft_ms"):  # each side's figure, as the points show it
        assert (pair[f"{metric}_on"], pair[f"{metric}_off"]) == (on[metric], off[metric])
    # No request samples: each repeat's own percentile, a t test on their logs; the change is the ratio of
    # the geometric means, its 95% interval beyond -5% and q <= 0.05 across the table's two tests.
    for metric, on, off in (("p50_ttft_ms", (40, 60), (250, 270)), ("p99_ttft_ms", (100, 120), (300, 340))):
        change = float(np.sqrt(np.prod(on) / np.prod(off))) - 1
        assert pair[f"{metric}_change"] == pytest.approx(change)
        assert pair[f"{metric}_change_low"] < change < pair[f"{metric}_change_high"] < -0.05
        assert pair[f"{metric}_q"] <= 0.05 and pair[f"{metric}_verdict"] == "improvement"
    assert pair["p50_ttft_ms_finding"].startswith("p50 TTFT -81% [-92%, ")
    assert (
        pair["change_method"] == "p50 TTFT, p99 TTFT: no request samples, repeats only: t test, 2 + 2 repeats"
    )
    # What was compared: the arguments both share, the workload, the host and the level.
    assert pair["engine_args"] == "--enforce-eager"
    assert pair["configuration"] == "m8g.xlarge · vLLM 0.32.0 · TP1 · --enforce-eager"
    assert pair["workload"] == "shared-prefix: prefix_repetition 1088→64, 1024-token shared prefix"
    assert pair["host"] == "local: aarch64 Neoverse-V2, 4 vCPU" and pair["level"] == "concurrency 1"
    assert (pair["model_short"], pair["repeats_on"], pair["repeats_off"]) == ("model", 2, 2)
    assert pair["point_id_on"] != pair["point_id_off"]


def test_a_pair_with_request_samples_is_tested_from_its_requests() -> None:
    """With the requests of each repeat, the percentiles are each repeat's own of its requests: one repeat
    each is enough to test (what the requests alone can tell, the method says), where the repeats' figures
    alone could not."""
    runs = [*_runs(ON, (103,), (130,)), *_runs(OFF, (100,), (100,))]
    rng = np.random.default_rng(1)
    ttft = {
        f"{ON}-1-0": 50 * np.exp(rng.normal(0, 0.2, 400)),
        f"{OFF}-1-0": 250 * np.exp(rng.normal(0, 0.2, 400)),
    }
    (pair,) = _pairs(runs, Samples({run: {"ttft": values} for run, values in ttft.items()}))
    assert pair["p50_ttft_ms_change"] == pytest.approx(-0.8, abs=0.03)
    assert pair["p50_ttft_ms_verdict"] == pair["p99_ttft_ms_verdict"] == "improvement"
    assert (
        "1 + 1 repeats of 400+ requests, from the requests alone: host-to-host noise not measured"
        in pair["change_method"]
    )


def test_small_changes_and_what_one_repeat_cannot_tell_are_called_so() -> None:
    # One repeat each without request samples: no spread to test a change against: undecided, whatever its
    # size; the finding says why.
    (pair,) = _pairs([*_runs(ON, (103,), (130,)), *_runs(OFF, (100,), (100,))])
    assert pair["p99_ttft_ms_change"] == pytest.approx(0.3) and pair["p99_ttft_ms_verdict"] == "undecided"
    assert "no spread to test against" in pair["p99_ttft_ms_finding"]
    # Two close repeats each: +2% is "no change" (within the 5% minimum effect); a slower cache, +30%, is
    # a regression.
    (pair,) = _pairs([*_runs(ON, (102, 102.5), (130, 131)), *_runs(OFF, (100, 100.5), (100, 101))])
    assert pair["p50_ttft_ms_verdict"] == "no change" and pair["p99_ttft_ms_verdict"] == "regression"
    # A p50 the runs did not record: blank change, undecided, never a made-up zero.
    (blank,) = _pairs([*_runs(ON, (1,), (130,), p50_ttft_ms=None), *_runs(OFF, (100,), (100,))])
    assert blank["p50_ttft_ms_on"] is None
    assert blank["p50_ttft_ms_change"] is None and blank["p50_ttft_ms_verdict"] == "undecided"


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
    for cell in ("p50 TTFT, prefix caching on", "p50 TTFT -81% [", "q = 0.0", "improvement", "2 + 2 repeats"):
        assert cell in table, cell
    # Parquet keeps the machine names, the CSV the human ones, like every table.
    lake = Lake(str(tmp_path / "lake"))
    written = write_report(lake, "rid", tables, flt, len(runs), when)
    (row,) = pq.read_table(lake.fs.open(written["prefix_caching.parquet"], "rb")).to_pylist()
    assert row["p50_ttft_ms_verdict"] == "improvement" and row["p50_ttft_ms_q"] <= 0.05
    assert row["p50_ttft_ms_change_low"] < row["p50_ttft_ms_change"] < row["p50_ttft_ms_change_high"]
    with lake.fs.open(written["prefix_caching.csv"], "rb") as f:
        (line,) = csv.DictReader(io.TextIOWrapper(f, encoding="utf-8"))
    assert line["p99 TTFT, ms: verdict"] == "improvement"
    assert line["p99 TTFT: change [95% interval], q-value"].startswith("p99 TTFT -")
    # Without a pair (only the on point): no section on the page, an empty table in the files.
    alone = build_report(runs[:2], PRICES, [], flt)
    assert alone["prefix_caching"] == []
    assert "Prefix caching: TTFT with and without" not in render_html("r", alone, flt, 2, when)
