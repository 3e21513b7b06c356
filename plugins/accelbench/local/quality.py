"""A configuration's quality, measured against its live server after the load levels (a spec with a quality
plan): the raw evidence the campaign's summary compares with the reference's (accelbench.lake.quality).

- Next-token distributions: the top-k logprobs of every position of the project's probe prompts, twice (in
  the set's order, then reversed): the first pass is what the reference is compared with, the two passes
  against each other are this configuration's own noise floor.
- Accuracy: the project's exact-answer task (accelbench.core.quality_task) through lm-eval's
  `local-completions` model against the server's /v1/completions, run from the quantization environment
  (.venv-quant, where lm-eval is installed), offline; its results JSON is kept as lm-eval wrote it, with each
  question's outcome from its samples.

Written to `quality.json` beside the envelope, so it travels to the lake's raw area with the rest. A step
that fails records its error there and the levels' evidence still lands."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from accelbench.core.fidelity import fidelity
from accelbench.core.probe_prompts import probe_prompts
from accelbench.core.quality_task import METRIC, TASK, write_task
from accelbench.core.spec import QualityPlan
from accelbench.errors import AccelbenchError
from accelbench.lake.quality import QUALITY_FILE
from accelbench.lifetime import die_with_parent
from accelbench.loadgen.logprobs import TOP_K, prompt_logprobs
from accelbench.local.offline_script import OFFLINE
from accelbench.local.quantized_model import quant_python

log = logging.getLogger(__name__)
FORMAT = 1  # of quality.json
LM_EVAL_TIMEOUT_S = 1800.0
LM_EVAL_CONCURRENCY = 4  # requests lm-eval keeps in flight


class QualityError(AccelbenchError):
    """lm-eval failed or wrote no result: the message holds its output's tail."""


def measure_quality(
    plan: QualityPlan, base_url: str, served_model_name: str, model_id: str, spec_dir: Path
) -> dict[str, Any]:
    """Both measurements against the server at `base_url`; writes and returns quality.json's document."""
    doc: dict[str, Any] = {
        "format": FORMAT,
        "plan": plan.model_dump(mode="json"),
        "model_id": model_id,
        "is_reference": model_id == plan.reference,
        "errors": {},
    }
    started = time.monotonic()
    try:
        doc["logprobs"] = _logprobs(plan, base_url, served_model_name)
    except (AccelbenchError, ValueError) as exc:  # ValueError: no position had logprobs
        doc["errors"]["logprobs"] = f"{type(exc).__name__}: {exc}"
    log.info(
        "quality: next-token distributions of %d prompts in %.0f s", plan.prompts, time.monotonic() - started
    )
    started = time.monotonic()
    try:
        doc["accuracy"] = _accuracy(plan, base_url, served_model_name, spec_dir / "lm-eval")
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


def _accuracy(plan: QualityPlan, base_url: str, model: str, work: Path) -> dict[str, Any]:
    """lm-eval's `run` over the generated task; its results JSON, and each question's outcome."""
    task_dir, out = write_task(work / "task", plan.questions), work / "out"
    model_args = [
        f"model={model}",
        f"base_url={base_url}/v1/completions",
        f"num_concurrent={LM_EVAL_CONCURRENCY}",
        "max_retries=1",
        "tokenizer_backend=none",  # the task's prompts go as text: no tokenizer to fetch from a hub
        "tokenized_requests=False",
    ]
    cmd = [str(quant_python()), "-m", "lm_eval", "run", "--model", "local-completions", "--model_args"]
    cmd += [*model_args, "--tasks", TASK, "--include_path", str(task_dir), "--output_path", str(out)]
    cmd += ["--log_samples", "--seed", "0"]
    env = os.environ | OFFLINE | {"HF_DATASETS_OFFLINE": "1", "HF_HOME": str(work / "hf-home")}
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=env,
        timeout=LM_EVAL_TIMEOUT_S,
        check=False,
        preexec_fn=die_with_parent,
    )
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
