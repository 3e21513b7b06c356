"""The `quality` table of a campaign: each configuration of a quantization matrix against its reference,
from the raw evidence each benchmark kept (quality.json, accelbench.loadgen.quality_step), written when every
benchmark of the campaign has landed (the summary task), since a configuration needs its reference's.

A configuration is paired with the reference configuration of the same campaign, instance type and workload
(the spec whose model is the quality plan's reference). Its next-token distributions go through
`accelbench.quality.fidelity` against the reference's, its answers through `accelbench.quality.accuracy`
against the reference's answers to the same questions; the reference's own row holds its two passes over the
prompts against each other (the noise floor, ~0)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from accelbench.lake.raw import RawLocation
from accelbench.lake.schemas import QUALITY, SCHEMA_VERSION
from accelbench.lake.store import Lake, safe_name
from accelbench.quality.accuracy import accuracy, accuracy_ratio
from accelbench.quality.fidelity import fidelity

log = logging.getLogger(__name__)
QUALITY_FILE = "quality.json"  # written by accelbench.loadgen.quality_step beside the envelope
# The runs columns a quality row repeats (the configuration as the runs rows name it).
FROM_RUNS = (
    "campaign_id",
    "spec_id",
    "dag_run_id",
    "matrix_key",
    "instance_type",
    "workload",
    "model",
    "quantization",
    "server_quantization",
    "vllm_version",
    "execution_mode",
    "host_cpu_model",
)

Reader = Callable[[dict[str, Any]], dict[str, Any] | None]  # a spec's first runs row -> its quality.json


def quality_rows(runs: Iterable[dict[str, Any]], read: Reader) -> list[dict[str, Any]]:
    """One row per spec of `runs` (a campaign's runs rows) that kept a quality.json."""
    firsts: dict[str, dict[str, Any]] = {}
    for row in runs:
        firsts.setdefault(row["spec_id"], row)
    docs = {spec_id: doc for spec_id, row in firsts.items() if (doc := read(row)) is not None}
    references = {
        (firsts[s]["instance_type"], firsts[s]["workload"]): s
        for s, doc in docs.items()
        if doc.get("is_reference")
    }
    rows = []
    for spec_id, doc in sorted(docs.items()):
        run = firsts[spec_id]
        ref_id = references.get((run["instance_type"], run["workload"]))
        rows.append(_row(run, doc, docs.get(ref_id) if ref_id else None))
    return rows


def _row(run: dict[str, Any], doc: dict[str, Any], ref: dict[str, Any] | None) -> dict[str, Any]:
    plan = doc.get("plan") or {}
    row: dict[str, Any] = (
        dict.fromkeys(QUALITY.names)
        | {k: run.get(k) for k in FROM_RUNS}
        | {
            "schema_version": SCHEMA_VERSION,
            "reference_model": plan.get("reference"),
            "is_reference": bool(doc.get("is_reference")),
            "source": "measured",
        }
    )
    errors = [f"{step}: {why}" for step, why in (doc.get("errors") or {}).items()]
    if ref is None:
        errors.append(f"no reference configuration ({plan.get('reference')}) measured beside it")
    mine, theirs = doc.get("logprobs"), (ref or {}).get("logprobs")
    if mine:
        row["noise_kl_mean"] = mine["noise_floor"]["kl_mean"]
        if doc.get("is_reference"):
            row |= mine["noise_floor"]
        elif theirs:
            row |= fidelity(theirs["positions"], mine["positions"], mine["top_k"]).columns()
        elif ref is not None:
            errors.append("the reference's next-token distributions were not measured")
    answers, ref_answers = doc.get("accuracy"), (ref or {}).get("accuracy")
    if answers:
        row |= _accuracy(answers, ref_answers)
        if ref is not None and not ref_answers:
            errors.append("the reference's accuracy was not measured")
    row["error"] = "; ".join(errors) or None
    return row


def _accuracy(answers: dict[str, Any], ref_answers: dict[str, Any] | None) -> dict[str, Any]:
    mine = accuracy(answers["correct"])
    row = {
        "task": answers["task"],
        "questions": len(answers["correct"]),
        "accuracy": mine.estimate,
        "accuracy_low": mine.low,
        "accuracy_high": mine.high,
        "accuracy_method": mine.method,
        "lm_eval_version": answers["results"].get("lm_eval_version"),
    }
    if ref_answers and len(ref_answers["correct"]) == len(answers["correct"]):
        ref = accuracy(ref_answers["correct"])
        ratio = accuracy_ratio(answers["correct"], ref_answers["correct"])
        row |= {
            "reference_accuracy": ref.estimate,
            "reference_accuracy_low": ref.low,
            "reference_accuracy_high": ref.high,
            "accuracy_ratio": ratio.estimate,
            "accuracy_ratio_low": ratio.low,
            "accuracy_ratio_high": ratio.high,
            "accuracy_ratio_method": ratio.method,
        }
    return row


def quality_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=QUALITY)


def land_quality(lake: Lake, campaign_id: str, date: str, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The campaign's quality rows from its raw evidence, written to the lake (one file per accelerator type
    partition, replaced by a rerun); the rows. Nothing is written for a campaign without a quality plan."""

    def read(row: dict[str, Any]) -> dict[str, Any] | None:
        where = RawLocation(row["accelerator_type"], date, campaign_id, row["spec_id"])
        return where.reader(lake)(QUALITY_FILE)

    rows = quality_rows(runs, read)
    tier = {run["spec_id"]: run["accelerator_type"] for run in runs}
    by_type: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_type.setdefault(tier[row["spec_id"]], []).append(row)
    for accelerator_type, mine in by_type.items():
        lake.write_table("quality", quality_table(mine), accelerator_type, date, safe_name(campaign_id))
    return rows
