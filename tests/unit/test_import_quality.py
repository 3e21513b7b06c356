"""Accuracy measured elsewhere: lm-eval results JSON files into the quality table (accelbench.lake.
imported_quality). The two files in tests/data/lm_eval are real: lm-eval 0.4.13's `run --output_path` over
the project's generated task (200 questions) against vLLM CPU serving the embedded model's bf16 checkpoint and
its W8A8 checkpoint here (2026-12-03), unedited."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from accelbench.cli import main
from accelbench.lake.imported_quality import (
    QualityImportError,
    QualityTarget,
    TaskResult,
    quality_row,
    ratio_interval,
    read_results,
)
from accelbench.lake.store import Lake

from tests.support.paths import REPO

DATA = REPO / "tests" / "data" / "lm_eval"
BF16, W8A8 = DATA / "results-bf16.json", DATA / "results-w8a8.json"
TARGET = QualityTarget(
    model="org/model-w8a8", reference_model="org/model", accelerator_type="cpu", instance_type="m8g.xlarge"
)


def test_a_results_file_gives_its_tasks_share_right_and_its_sample_count() -> None:
    found = read_results(W8A8, None, None)
    assert (found.task, found.metric, found.value, found.n) == (
        "accelbench_exact",
        "exact_match,strip",
        0.685,
        200,
    )
    assert found.lm_eval_version == "0.4.13" and found.date == "2026-12-03"


def test_the_row_holds_the_accuracy_and_its_share_of_the_references_with_intervals() -> None:
    row = quality_row(W8A8, TARGET, BF16)
    assert row["accuracy"] == 0.685 and row["accuracy_low"] < 0.685 < row["accuracy_high"]
    assert row["reference_accuracy"] == 0.73 and row["accuracy_ratio"] == pytest.approx(0.685 / 0.73)
    assert row["accuracy_ratio_low"] < row["accuracy_ratio"] < row["accuracy_ratio_high"]
    assert row["source"] == "imported" and row["task"] == "accelbench_exact (exact_match,strip)"
    assert "unpaired" in row["accuracy_ratio_method"] and row.get("error") is None
    alone = quality_row(W8A8, TARGET)
    assert alone.get("accuracy_ratio") is None and "no reference results imported" in alone["error"]


def test_the_unpaired_ratio_interval_is_the_binomials_by_simulation() -> None:
    """Coverage: with true shares 0.70 and 0.73 over 200 questions each, the interval holds the true ratio
    about 95% of the time (checked over 200 simulated pairs of results)."""
    rng = np.random.default_rng(5)
    held = 0
    for i in range(200):
        c, r = rng.binomial(200, 0.70) / 200, rng.binomial(200, 0.73) / 200
        found = ratio_interval(
            TaskResult("t", "acc", c, 200, None, "d"), TaskResult("t", "acc", r, 200, None, "d"), i
        )
        held += found.low <= 0.70 / 0.73 <= found.high  # type: ignore[operator]
    assert 0.90 <= held / 200 <= 0.99


def test_a_file_that_is_not_a_share_right_or_names_no_task_is_refused_with_what_it_holds(
    tmp_path: Path,
) -> None:
    doc = json.loads(BF16.read_text())
    doc["results"]["accelbench_exact"]["exact_match,strip"] = 0.7312  # not k/200
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(doc))
    with pytest.raises(QualityImportError, match="not a share of 200 questions right"):
        read_results(odd, None, None)
    with pytest.raises(QualityImportError, match=r"no task 'mmlu'; it holds \['accelbench_exact'\]"):
        read_results(BF16, "mmlu", None)
    with pytest.raises(QualityImportError, match=r"no metric 'acc,none'; it has \['exact_match,strip'\]"):
        read_results(BF16, None, "acc,none")
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(QualityImportError, match="not an lm-eval results JSON"):
        read_results(tmp_path / "x.json", None, None)


def test_the_command_lands_the_row_in_the_lake(tmp_path: Path, capsys) -> None:
    lake = tmp_path / "lake"
    args = ["import-quality", str(W8A8), "--model", "org/model-w8a8", "--reference-model", "org/model"]
    args += ["--reference", str(BF16), "--accelerator-type", "cpu", "--lake", str(lake)]
    assert main(args) == 0 and "accuracy 68.5% of 200 questions" in capsys.readouterr().out
    (row,) = Lake(str(lake)).read("quality").to_pylist()
    assert (row["model"], row["accuracy"], row["date"], row["accelerator_type"]) == (
        "org/model-w8a8",
        0.685,
        "2026-12-03",
        "cpu",
    )
    assert main(args) == 0 and Lake(str(lake)).read("quality").num_rows == 1  # the same file: replaced
    with pytest.raises(SystemExit):  # argparse names the field and its choices
        main([*args[:2], "--model", "m", "--reference-model", "r", "--accelerator-type", "tpu"])
    assert "invalid choice: 'tpu'" in capsys.readouterr().err
