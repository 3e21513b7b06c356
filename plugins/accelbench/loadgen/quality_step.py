"""A configuration's quality, measured against its live server after the load levels (a spec with a quality
plan), by the load generator in both modes (the benchmark pod's driver, the local executor): the raw evidence
the campaign's summary compares with the reference's (accelbench.lake.quality).

- Next-token distributions: the top-k logprobs of every position of the project's probe prompts, twice (in
  the set's order, then reversed): the first pass is what the reference is compared with, the two passes
  against each other are this configuration's own noise floor.
- Accuracy: the project's exact-answer task (accelbench.quality.exact_answer_task) through lm-eval's
  `local-completions` model against the server's /v1/completions, run by the interpreter that has lm-eval
  (the load-generator image's own environment; .venv-quant in local mode), offline; its results JSON is kept
  as lm-eval wrote it, with each question's outcome from its samples.

Written to `quality.json` beside the envelope, so it travels to the lake's raw area with the rest. A step
that fails records its error there, and nothing here raises: the levels' evidence lands whatever happened."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from accelbench.config import env_name
from accelbench.core.offline import OFFLINE
from accelbench.core.spec import BenchmarkSpec, QualityPlan
from accelbench.errors import AccelbenchError
from accelbench.lake.quality import QUALITY_FILE
from accelbench.lifetime import die_with_parent
from accelbench.loadgen.logprobs import TOP_K, prompt_logprobs
from accelbench.quality.exact_answer_task import METRIC, TASK, write_task
from accelbench.quality.fidelity import fidelity
from accelbench.quality.probe_prompts import probe_prompts

log = logging.getLogger(__name__)
FORMAT = 1  # of quality.json
LM_EVAL_TIMEOUT_S = 1800.0
LM_EVAL_CONCURRENCY = 4  # requests lm-eval keeps in flight
LM_EVAL_PYTHON_ENV = env_name("lm_eval_python")


class QualityError(AccelbenchError):
    """lm-eval failed or wrote no result: the message holds its output's tail."""


def measure_quality(
    spec: BenchmarkSpec, base_url: str, spec_dir: Path, lm_eval_python: Path | None
) -> dict[str, Any] | None:
    """Both measurements of `spec`'s quality plan against the server at `base_url`; writes and returns
    quality.json's document (None when the spec has no plan). `lm_eval_python`: the interpreter with lm-eval
    (None: the accuracy step records that there is none)."""
    plan = spec.quality
    if plan is None:
        return None
    try:
        return _measure(plan, base_url, spec, spec_dir, lm_eval_python)
    except Exception:  # the levels' evidence still goes to the lake; the quality row says it is missing
        log.exception("quality of %s not measured", spec.spec_id)
        return None


def _measure(
    plan: QualityPlan, base_url: str, spec: BenchmarkSpec, spec_dir: Path, lm_eval_python: Path | None
) -> dict[str, Any]:
    model_id = spec.server.model_id or spec.server.model  # what the reference is named by
    name = spec.server.served_model_name
    doc: dict[str, Any] = {
        "format": FORMAT,
        "plan": plan.model_dump(mode="json"),
        "model_id": model_id,
        "is_reference": model_id == plan.reference,
        "errors": {},
    }
    started = time.monotonic()
    try:
        doc["logprobs"] = _logprobs(plan, base_url, name)
    except (AccelbenchError, ValueError) as exc:  # ValueError: no position had logprobs
        doc["errors"]["logprobs"] = f"{type(exc).__name__}: {exc}"
    log.info(
        "quality: next-token distributions of %d prompts in %.0f s", plan.prompts, time.monotonic() - started
    )
    started = time.monotonic()
    try:
        doc["accuracy"] = _accuracy(plan, base_url, name, spec_dir / "lm-eval", lm_eval_python)
    except (AccelbenchError, OSError, subprocess.SubprocessError) as exc:
        doc["errors"]["accuracy"] = f"{type(exc).__name__}: {exc}"
    log.info("quality: lm-eval over %d questions in %.0f s", plan.questions, time.monotonic() - started)
    for step, why in doc["errors"].items():
        log.error("quality: %s failed: %s", step, why)
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / QUALITY_FILE).write_text(json.dumps(doc))
    return doc


def _logprobs(plan: QualityPlan, base_url: str, model: str) -> dict[str, Any]:
    prompts = probe_prompts(plan.prompts)
    first = prompt_logprobs(base_url, model, prompts, TOP_K)
    again = prompt_logprobs(base_url, model, prompts[::-1], TOP_K)[::-1]
    floor = fidelity(first, again, TOP_K)
    log.info("quality: this configuration against itself (the noise floor): %s", floor.words())
    return {
        "top_k": TOP_K,
        "prompts": len(prompts),
        "positions": first,
        "noise_floor": floor.columns(),  # this configuration against itself, the set reversed
    }


def _accuracy(
    plan: QualityPlan, base_url: str, model: str, work: Path, python: Path | None
) -> dict[str, Any]:
    """lm-eval's `run` over the generated task; its results JSON, and each question's outcome."""
    if python is None or not python.is_file():
        raise QualityError(
            f"no interpreter with lm-eval{f' at {python}' if python else ''}: set {LM_EVAL_PYTHON_ENV} (the "
            "load-generator image sets it; in local mode scripts/quant-env.sh makes .venv-quant)"
        )
    task_dir, out = write_task(work / "task", plan.questions), work / "out"
    model_args = [
        f"model={model}",
        f"base_url={base_url}/v1/completions",
        f"num_concurrent={LM_EVAL_CONCURRENCY}",
        "max_retries=1",
        "tokenizer_backend=none",  # the task's prompts go as text: no tokenizer to fetch from a hub
        "tokenized_requests=False",
    ]
    cmd = [str(python), "-m", "lm_eval", "run", "--model", "local-completions", "--model_args"]
    cmd += [*model_args, "--tasks", TASK, "--include_path", str(task_dir), "--output_path", str(out)]
    cmd += ["--log_samples", "--seed", "0"]
    # Caches (the task's dataset) under the work folder: the pod's root filesystem is read-only, its /tmp not.
    # Not evidence: removed after the run.
    caches = work / "caches"
    env = os.environ | OFFLINE | {"HF_HOME": str(caches / "hf"), "XDG_CACHE_HOME": str(caches)}
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=env,
        timeout=LM_EVAL_TIMEOUT_S,
        check=False,
        preexec_fn=die_with_parent,
    )
    shutil.rmtree(caches, ignore_errors=True)
    (work / "lm-eval.log").write_text(proc.stdout + proc.stderr)
    results = sorted(out.rglob("results_*.json"))
    samples = sorted(out.rglob(f"samples_{TASK}_*.jsonl"))
    if proc.returncode != 0 or not results or not samples:
        tail = (proc.stdout + proc.stderr)[-1500:]
        raise QualityError(f"lm-eval exited {proc.returncode} with no result: {tail}")
    document = json.loads(results[-1].read_text())
    outcomes = {}
    for line in samples[-1].read_text().splitlines():
        sample = json.loads(line)
        outcomes[int(sample["doc_id"])] = float(sample[METRIC.split(",")[0]])
    return {
        "task": TASK,
        "metric": METRIC,
        "correct": [outcomes[i] for i in sorted(outcomes)],
        "kinds": _kinds(samples[-1]),
        "results": document,
    }


def _kinds(samples: Path) -> list[str]:
    """Each question's kind, in doc_id order (the task's documents carry it)."""
    rows = sorted((json.loads(line) for line in samples.read_text().splitlines()), key=lambda s: s["doc_id"])
    return [str(s["doc"]["kind"]) for s in rows]
