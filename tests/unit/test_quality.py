"""Accuracy, its ratio to the reference's and the quality gate (accelbench.quality.quality_gate), against hand
computations and scipy; the exact-answer task is the same on every machine; quality rows pair each
configuration with its reference (accelbench.lake.quality)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from accelbench.lake.quality import quality_rows, quality_table
from accelbench.quality.accuracy import accuracy, accuracy_ratio
from accelbench.quality.exact_answer_task import FEWSHOT, KINDS, TASK, documents, questions, write_task
from accelbench.quality.quality_gate import gate, verdict


def test_accuracy_is_the_share_right_with_the_wilson_interval_computed_by_hand() -> None:
    found = accuracy([1.0] * 7 + [0.0] * 3)
    n, p, z = 10, 0.7, 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert found.estimate == 0.7 and "Wilson" in found.method
    assert found.low == pytest.approx(centre - half) and found.high == pytest.approx(centre + half)
    assert accuracy([1.0] * 10).high == 1.0 and accuracy([1.0] * 10).low < 1.0  # never [1, 1] from 10


def test_the_ratio_of_identical_answers_is_one_without_width_and_a_loss_is_seen() -> None:
    rng = np.random.default_rng(3)
    ref = (rng.random(200) < 0.7).astype(float)
    same = accuracy_ratio(ref, ref)
    assert (same.estimate, same.low, same.high) == (1.0, 1.0, 1.0)
    worse = ref.copy()
    worse[np.flatnonzero(ref)[:20]] = 0.0  # 20 right answers lost
    found = accuracy_ratio(worse, ref)
    assert found.estimate == pytest.approx(worse.mean() / ref.mean())
    assert found.low is not None and found.high is not None and found.low < found.estimate < found.high
    assert found.high < 0.99  # 14% fewer right answers: the gate's 99% is outside the interval
    assert accuracy_ratio([0.0, 1.0], [0.0, 0.0]).estimate is None  # the reference got nothing right
    with pytest.raises(ValueError, match="against the reference's"):
        accuracy_ratio([1.0], [1.0, 0.0])


def test_the_paired_ratio_interval_covers_the_true_ratio_about_95_percent_of_the_time() -> None:
    """A small coverage check (benchmarks/quality_intervals.py runs the full one): questions with a true
    chance of 0.7 for the reference, the candidate losing each right answer with chance 0.05."""
    rng = np.random.default_rng(11)
    covered, trials = 0, 60
    for seed in range(trials):
        ref = (rng.random(150) < 0.7).astype(float)
        cand = ref * (rng.random(150) >= 0.05)
        found = accuracy_ratio(cand, ref, seed=seed)
        covered += found.low <= 0.95 <= found.high  # type: ignore[operator]
    assert covered >= 0.85 * trials


@pytest.mark.parametrize(
    ("low", "high", "limits", "expected"),
    [
        (0.995, 1.0, {"at_least": 0.99}, "pass"),
        (0.95, 0.985, {"at_least": 0.99}, "fail"),
        (0.97, 1.01, {"at_least": 0.99}, "undecided"),
        (0.01, 0.05, {"at_most": 0.1}, "pass"),
        (0.12, 0.2, {"at_most": 0.1}, "fail"),
        (0.05, 0.15, {"at_most": 0.1}, "undecided"),
        (None, 0.05, {"at_most": 0.1}, "pass"),
        (0.995, None, {"at_least": 0.99}, "pass"),
    ],
)
def test_a_verdict_is_decided_only_by_the_whole_interval(low, high, limits, expected) -> None:
    assert verdict(low, high, **limits) == expected


def test_the_gate_needs_both_limits_and_says_why() -> None:
    good_ratio, good_kl = accuracy_ratio([1.0, 0.0] * 50, [1.0, 0.0] * 50), None
    from accelbench.core.intervals import Interval

    good_kl = Interval(0.05, 0.045, 0.062, 0.95, "t")
    bad_kl = Interval(0.3, 0.25, 0.35, 0.95, "t")
    assert gate(good_ratio, good_kl)[0] == "pass"
    failed, why = gate(good_ratio, bad_kl)
    assert failed == "fail" and why.startswith("mean KL 0.3000 [0.2500, 0.3500] nats vs <= 0.1")
    assert gate(None, good_kl) == ("undecided", "no accuracy against the reference")


def test_the_task_is_the_same_everywhere_with_examples_of_the_questions_own_kind() -> None:
    first, again = documents(40), documents(40)
    assert first == again and questions(40) == questions(40) and questions(40, seed=1) != questions(40)
    assert [d["kind"] for d in first[: len(KINDS)]] == ["successor", "first_letter", "capitals", "copy"]
    for doc in first:
        blocks = doc["prompt"].split("\n\n")
        assert len(blocks) == FEWSHOT + 1 and blocks[-1] == f"Q: {doc['question']}\nA:"
        assert f"Q: {doc['question']}\n" not in "\n\n".join(blocks[:-1])  # never its own answer as an example
    succ = next(d for d in first if d["kind"] == "successor")
    n = int(succ["question"].split()[-1].rstrip("?"))
    assert succ["answer"] == str(n + 1)


def test_the_lm_eval_task_file_reads_its_documents(tmp_path) -> None:
    folder = write_task(tmp_path, 12)
    config = json.loads((folder / f"{TASK}.yaml").read_text())  # JSON is YAML
    assert config["task"] == TASK and config["output_type"] == "generate_until"
    (data,) = config["dataset_kwargs"]["data_files"].values()
    assert [json.loads(line) for line in Path(data).read_text().splitlines()] == documents(12)


def _doc(reference: bool, correct: list[float], positions: list, noise: float = 0.0) -> dict:
    return {
        "plan": {"reference": "org/base"},
        "is_reference": reference,
        "errors": {},
        "logprobs": {"top_k": 2, "positions": positions, "noise_floor": {"kl_mean": noise}},
        "accuracy": {"task": TASK, "correct": correct, "results": {"lm_eval_version": "0.4.13"}},
    }


def _run(spec: str, model: str, instance: str = "m8g.xlarge") -> dict:
    return {
        "spec_id": spec,
        "model": model,
        "instance_type": instance,
        "workload": "fixed",
        "campaign_id": "c",
    }


def test_each_configuration_is_paired_with_the_reference_of_its_type_and_workload() -> None:
    same = [[{"a": math.log(0.6), "b": math.log(0.3)}, {"a": math.log(0.5), "b": math.log(0.4)}]]
    moved = [[{"a": math.log(0.3), "b": math.log(0.6)}, {"a": math.log(0.5), "b": math.log(0.4)}]]
    docs = {
        "s-ref": _doc(True, [1.0, 1.0, 0.0, 1.0], same, noise=0.0001),
        "s-q": _doc(False, [1.0, 0.0, 0.0, 1.0], moved),
        "s-other": _doc(False, [1.0, 1.0, 0.0, 1.0], same),
    }
    runs = [_run("s-ref", "org/base"), _run("s-q", "org/base-w8a8"), _run("s-other", "org/x", "c8g.xlarge")]
    runs.append(_run("s-q", "org/base-w8a8"))  # a second level of the same spec: one quality row
    rows = {r["spec_id"]: r for r in quality_rows(runs, lambda run: docs[run["spec_id"]])}
    assert set(rows) == {"s-ref", "s-q", "s-other"}
    q = rows["s-q"]
    # By hand: the first position's KL(ref || q) over {a, b, rest}; the second is 0; the mean over positions.
    p, c = np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.6, 0.1])
    assert q["kl_mean"] == pytest.approx(float(np.sum(p * np.log(p / c))) / 2)
    assert q["top1_agreement"] == 0.5 and q["accuracy"] == 0.5 and q["reference_accuracy"] == 0.75
    assert q["accuracy_ratio"] == pytest.approx(0.5 / 0.75) and q["error"] is None
    # The reference's own row: it against itself (its two passes), the floor the others are read against.
    assert (
        rows["s-ref"]["is_reference"] and rows["s-ref"]["kl_mean"] == rows["s-ref"]["noise_kl_mean"] == 0.0001
    )
    # On a type with no reference configuration: its own accuracy, and why nothing is compared.
    other = rows["s-other"]
    assert other["accuracy"] == 0.75 and other["accuracy_ratio"] is None and other["kl_mean"] is None
    assert "no reference configuration (org/base)" in other["error"]
    assert quality_table(list(rows.values())).num_rows == 3


def test_a_quality_step_that_cannot_run_records_why_and_one_without_a_plan_skips(tmp_path: Path) -> None:
    """The driver's step (accelbench.loadgen.quality_step) never raises: a server it cannot reach and no
    lm-eval interpreter are each recorded in quality.json, naming what to set; the levels' evidence lands
    anyway."""
    from accelbench.core.spec import QualityPlan
    from accelbench.lake.quality import QUALITY_FILE
    from accelbench.loadgen.quality_step import LM_EVAL_PYTHON_ENV, measure_quality

    from tests.support.specs import spec_for

    plain = spec_for("/models/m")
    assert measure_quality(plain, "http://127.0.0.1:9", tmp_path, None) is None
    assert not (tmp_path / QUALITY_FILE).exists()
    spec = plain.model_copy(update={"quality": QualityPlan(reference="/models/m", prompts=2, questions=4)})
    doc = measure_quality(spec, "http://127.0.0.1:9", tmp_path, tmp_path / "no-python")
    assert doc is not None and json.loads((tmp_path / QUALITY_FILE).read_text()) == doc
    assert doc["is_reference"] and set(doc["errors"]) == {"logprobs", "accuracy"}
    assert "Connection refused" in doc["errors"]["logprobs"]
    assert (
        f"no interpreter with lm-eval at {tmp_path / 'no-python'}: set {LM_EVAL_PYTHON_ENV}"
        in (doc["errors"]["accuracy"])
    )
