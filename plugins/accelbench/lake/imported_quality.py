"""Accuracy measured elsewhere: an lm-eval results JSON (what `lm-eval run --output_path` writes, the file
`results_<date>.json`) into the lake's `quality` table, joined to the configuration the caller names.

The file does not say what served the model (an lm-eval run names a model and an endpoint, not an instance
type or a quantization): the caller does (QualityTarget). What the file records is taken from it: the
task's metric, its sample count, lm-eval's version, the date. With the reference configuration's results
file of the same task, the row also holds the accuracy as a share of the reference's; the files hold no
per-question answers, so that interval is a parametric bootstrap of two independent binomials (wider than the
paired one a campaign measures: the same questions' answers agree more than two draws do). A metric that
is not a share of questions right (a score, a perplexity) is refused, naming the file's metrics.
Importing the same file again replaces its row (its id derives from the file's bytes)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from accelbench.core.intervals import CONFIDENCE, Interval
from accelbench.errors import AccelbenchError
from accelbench.lake.quality import quality_table
from accelbench.lake.schemas import SCHEMA_VERSION
from accelbench.lake.store import Lake
from accelbench.quality.accuracy import BOOTSTRAP_RESAMPLES, accuracy

IMPORT_CAMPAIGN = "imported"
SHARE_TOLERANCE = 1e-6  # a share of n questions times n is a whole number, up to float rounding


class QualityImportError(AccelbenchError):
    """The file is not an lm-eval results JSON of a task and metric the caller can use; says which."""


@dataclass(frozen=True)
class QualityTarget:
    """What served the model whose results the file holds (the caller's word: the file cannot say)."""

    model: str
    reference_model: str
    accelerator_type: str
    instance_type: str | None = None
    quantization: str | None = None
    vllm_version: str | None = None
    task: str | None = None  # the file's task to import; None: its only one
    metric: str | None = None  # "acc,none", "exact_match,strict-match"...; None: the task's only one


@dataclass(frozen=True)
class TaskResult:
    task: str
    metric: str
    value: float
    n: int
    lm_eval_version: str | None
    date: str  # the day the evaluation ran (UTC)


def read_results(path: Path, task: str | None, metric: str | None) -> TaskResult:
    """The named (or only) task's named (or only) metric of an lm-eval results JSON, with its sample count."""
    where = str(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise QualityImportError(f"{where}: not a readable JSON file ({exc})") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, dict) or not results:
        raise QualityImportError(f"{where}: no `results` object: not an lm-eval results JSON")
    if task is None:
        if len(results) != 1:
            raise QualityImportError(f"{where}: holds tasks {sorted(results)}: name one with --task")
        (task,) = results
    if task not in results:
        raise QualityImportError(f"{where}: no task {task!r}; it holds {sorted(results)}")
    metrics = {k: v for k, v in results[task].items() if "," in k and "_stderr," not in k}
    if metric is None:
        if len(metrics) != 1:
            raise QualityImportError(
                f"{where}: task {task} has metrics {sorted(metrics)}: name one with --metric"
            )
        (metric,) = metrics
    if metric not in metrics or not isinstance(metrics[metric], int | float):
        raise QualityImportError(f"{where}: task {task} has no metric {metric!r}; it has {sorted(metrics)}")
    counts = (doc.get("n-samples") or {}).get(task) or {}
    n = counts.get("effective", counts.get("original"))
    if not isinstance(n, int) or n <= 0:
        raise QualityImportError(
            f"{where}: no sample count for {task} (`n-samples`): its interval is unknown"
        )
    value = float(metrics[metric])
    if not 0 <= value <= 1 or abs(value * n - round(value * n)) > SHARE_TOLERANCE * n:
        raise QualityImportError(
            f"{where}: {task} {metric} = {value} is not a share of {n} questions right (acc, exact_match): "
            "the quality gate compares accuracies"
        )
    when = doc.get("date")
    day = (
        datetime.fromtimestamp(float(when), UTC).date().isoformat()
        if when
        else datetime.now(UTC).date().isoformat()
    )
    return TaskResult(task, metric, value, n, doc.get("lm_eval_version"), day)


def _accuracy(result: TaskResult) -> Interval:
    """The result's share right with its Wilson interval (its answers rebuilt from the share and n)."""
    right = round(result.value * result.n)
    return accuracy([1.0] * right + [0.0] * (result.n - right))


def ratio_interval(candidate: TaskResult, reference: TaskResult, seed: int = 0) -> Interval:
    """accuracy(candidate) / accuracy(reference) with a parametric bootstrap percentile interval: each side
    drawn as numpy's binomial of its own n and share, independently (no per-question answers to pair)."""
    method = f"parametric bootstrap, unpaired ({candidate.n} and {reference.n} questions)"
    if reference.value == 0:
        return Interval(None, None, None, CONFIDENCE, method)
    rng = np.random.default_rng(seed)
    c = rng.binomial(candidate.n, candidate.value, BOOTSTRAP_RESAMPLES) / candidate.n
    r = rng.binomial(reference.n, reference.value, BOOTSTRAP_RESAMPLES) / reference.n
    ratios = np.divide(c, r, out=np.full_like(c, np.nan), where=r > 0)
    low, high = np.nanquantile(ratios, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return Interval(candidate.value / reference.value, float(low), float(high), CONFIDENCE, method)


def quality_row(path: Path, target: QualityTarget, reference: Path | None = None) -> dict[str, Any]:
    """The `quality` row of the results file at `path`, against the reference's results file if given."""
    mine = read_results(path, target.task, target.metric)
    acc = _accuracy(mine)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    row: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "campaign_id": IMPORT_CAMPAIGN,
        "spec_id": f"imported-{digest}",
        "instance_type": target.instance_type,
        "model": target.model,
        "reference_model": target.reference_model,
        "is_reference": target.model == target.reference_model,
        "quantization": target.quantization,
        "vllm_version": target.vllm_version,
        "execution_mode": "imported",
        "source": "imported",
        "task": f"{mine.task} ({mine.metric})",
        "questions": mine.n,
        "accuracy": acc.estimate,
        "accuracy_low": acc.low,
        "accuracy_high": acc.high,
        "accuracy_method": acc.method,
        "lm_eval_version": mine.lm_eval_version,
        "date": mine.date,
    }
    if reference is not None:
        theirs = read_results(reference, mine.task, mine.metric)
        ref_acc = _accuracy(theirs)
        ratio = ratio_interval(mine, theirs)
        row |= {
            "reference_accuracy": ref_acc.estimate,
            "reference_accuracy_low": ref_acc.low,
            "reference_accuracy_high": ref_acc.high,
            "accuracy_ratio": ratio.estimate,
            "accuracy_ratio_low": ratio.low,
            "accuracy_ratio_high": ratio.high,
            "accuracy_ratio_method": ratio.method,
        }
    else:
        row["error"] = "no reference results imported beside it: no share of the reference's accuracy"
    return row


def import_quality(
    lake: Lake, path: Path, target: QualityTarget, reference: Path | None = None
) -> dict[str, Any]:
    """The row, written to the lake's quality table (partition: the target's tier and the run's date)."""
    row = quality_row(path, target, reference)
    table: pa.Table = quality_table([row])
    lake.write_table("quality", table, target.accelerator_type, row["date"], row["spec_id"])
    return row
