"""The `vllm bench serve` command line for one level: the flags FACTS.md says to always pass."""

from __future__ import annotations

from pathlib import Path

from accelbench.core.levels import Level
from accelbench.core.spec import BenchmarkSpec
from accelbench.core.workloads import TRACE_FILE
from accelbench.sizing.fit import LOADGEN_MAX_IN_FLIGHT

PERCENTILE_METRICS = "ttft,tpot,itl,e2el"
METRIC_PERCENTILES = "50,90,95,99"


def repeat_seed(spec: BenchmarkSpec, repeat: int) -> int:
    """A fixed, different seed per repeat: repeats sample different prompts, reruns the same ones."""
    return spec.load.seed + repeat


def bench_args(
    spec: BenchmarkSpec,
    base_url: str,
    *,
    num_prompts: int,
    seed: int,
    result_dir: Path,
    result_file: str,
    level: Level | None,
    metadata: dict[str, str],
) -> list[str]:
    load, server = spec.load, spec.server
    args = [
        "bench",
        "serve",
        *load.runs.bench_args(trace_file=str(result_dir / TRACE_FILE)),
        "--base-url",
        base_url,
        "--model",
        server.served_model_name,
        "--tokenizer",
        server.model,
        "--num-prompts",
        str(num_prompts),
        "--seed",
        str(seed),
        "--temperature",
        "0",
        "--ignore-eos",
        "--percentile-metrics",
        PERCENTILE_METRICS,
        "--metric-percentiles",
        METRIC_PERCENTILES,
        "--num-warmups",  # warm-ups run apart (Driver), outside the server counters a level is judged by
        "0",
        "--ready-check-timeout-sec",
        "0",  # warm-up runs once per server, apart
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(result_dir),
        "--result-filename",
        result_file,
        "--disable-tqdm",
    ]
    if level is not None and level.kind == "scale":
        # The trace's own arrival times at 1/scale of their gaps (vLLM multiplies each timestamp), open loop
        # up to the in-flight cap the pod's memory is sized for (a capped level is client-limited).
        args += ["--timed-trace-sec-multiplier", f"{1 / level.value:.9g}"]
        args += ["--max-concurrency", str(LOADGEN_MAX_IN_FLIGHT)]
    elif level is None or level.kind == "concurrency":
        args += ["--max-concurrency", f"{int(level.value) if level else 1}", "--request-rate", "inf"]
    else:
        # Open loop up to the in-flight cap the pod's memory is sized for (a capped level is client-limited).
        args += ["--request-rate", f"{level.value:g}", "--burstiness", str(load.burstiness)]
        args += ["--max-concurrency", str(LOADGEN_MAX_IN_FLIGHT)]
    if load.goodput_slos_ms:
        args += ["--goodput", *(f"{k}:{v:g}" for k, v in sorted(load.goodput_slos_ms.items()))]
    if metadata:
        args += ["--metadata", *(f"{k}={v}" for k, v in sorted(metadata.items()))]
    return args
