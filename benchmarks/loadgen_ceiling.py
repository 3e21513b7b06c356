"""Load-generator ceiling: the highest request rate the driver + `vllm bench serve` sustain on one core.

Run: .venv/bin/python benchmarks/loadgen_ceiling.py [--runs 3] [--rates 50,100,200,400,800,1600]
         [--guidellm .venv-guidellm/bin/guidellm] [--lake .demo/lake]

Against the zero-work server (benchmarks/zero_server.py, no delays, pinned to CPU 1), the client (pinned to
CPU 0) is the only limit. Each step sends Poisson arrivals at rate R for --seconds; it is sustained when the
achieved arrival rate is at least 95% of R and completions per second over the whole run (drain included)
at least 90% of R, with no failed request. The ceiling is the highest sustained R (median over runs), and
the streamed tokens per second at that step. With --guidellm, GuideLLM's constant-rate profile is put
through the same steps against the same server, also pinned to CPU 0. With --lake, the fastest ok run in
that lake (request and output token throughput) is the reference: target (issue 8) a ceiling at least 10x it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accelbench.core.spec import LoadPlan
from zero_pipeline import CLIENT_CPU, run_pipeline, spec, tiny_tokenizer, zero_server

ARRIVAL_OK, COMPLETION_OK, TARGET_FACTOR = 0.95, 0.90, 10
INPUT_LEN, OUTPUT_LEN = 32, 16


def vllm_step(rate: float, seconds: float, work: Path) -> dict:
    n = max(100, int(rate * seconds))
    load = LoadPlan(
        input_len=INPUT_LEN, output_len=OUTPUT_LEN, request_rates=(rate,), prompts_per_level=n, warmups=4
    )
    with zero_server() as (url, pid):
        lake, _ = run_pipeline(spec(load, f"ceiling-{rate:g}"), url, pid, work)
    (run,) = lake.read("runs").to_pylist()
    return {
        "arrival": run["achieved_rate"] or 0.0,
        "completions": run["completed"] / run["duration_s"],
        "failed": run["failed"],
        "tokens_per_s": run["total_output_tokens"] / run["duration_s"],
    }


def guidellm_step(guidellm: Path, rate: float, seconds: float, work: Path) -> dict:
    """GuideLLM 0.8.1's constant-rate profile, same server, same sizes, pinned to the client CPU."""
    n = max(100, int(rate * seconds))
    out = work / "guidellm.json"
    with zero_server() as (url, _):
        subprocess.run(
            [
                str(guidellm.resolve()),
                "run",
                "--backend",
                f"kind=openai_http,target={url},model=tiny,request_format=/v1/completions",
                "--profile",
                f"kind=constant,rate={rate:g}",
                "--constraint",
                f"kind=max_requests,count={n}",
                "--data",
                f"kind=synthetic_text,prompt_tokens={INPUT_LEN},output_tokens={OUTPUT_LEN}",
                "--tokenizer",
                f"kind=hf_auto,model={tiny_tokenizer()}",
                "--output",
                f"kind=json,path={out}",
                "--disable-console",
            ],
            check=True,
            capture_output=True,
            cwd=work,
            preexec_fn=lambda: os.sched_setaffinity(0, {CLIENT_CPU}),
            env=os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            timeout=max(300, 6 * seconds),
        )
    (bench,) = json.loads(out.read_text())["benchmarks"]
    totals = bench["metrics"]["request_totals"]
    done = bench["requests"]["successful"]
    starts = sorted(r["request_start_time"] for r in done)
    ends = max(r["request_end_time"] for r in done)
    return {
        "arrival": (len(starts) - 1) / (starts[-1] - starts[0]) if len(starts) > 1 else 0.0,
        "completions": len(done) / (ends - starts[0]),
        "failed": totals["errored"] + totals["incomplete"],
        "tokens_per_s": sum(r["output_tokens"] or 0 for r in done) / (ends - starts[0]),
    }


def sustained(step: dict, rate: float) -> bool:
    return (
        step["failed"] == 0
        and step["arrival"] >= ARRIVAL_OK * rate
        and step["completions"] >= COMPLETION_OK * rate
    )


def ceiling(name: str, step, rates: list[float], runs: int, seconds: float) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    print(f"\n{name}: rate -> achieved arrival / completions per s / tokens per s (median of {runs})")
    best = (0.0, 0.0)
    for rate in rates:
        results = []
        for i in range(runs):
            with tempfile.TemporaryDirectory(prefix=f"ceiling-{i}-") as tmp:
                results.append(step(rate, seconds, Path(tmp)))
        med = {k: statistics.median(r[k] for r in results) for k in results[0]}
        ok = sum(sustained(r, rate) for r in results) > runs / 2
        print(
            f"  {rate:>7g}/s -> {med['arrival']:>8.1f} {med['completions']:>8.1f} "
            f"{med['tokens_per_s']:>9.0f}  {'sustained' if ok else 'NOT sustained'}"
        )
        if not ok:
            break
        best = (rate, med["tokens_per_s"])
    print(f"  ceiling: {best[0]:g} requests/s, {best[1]:.0f} streamed tokens/s on one core")
    return best


def fastest_in(lake_dir: str) -> tuple[float, float]:
    """The fastest ok run of a local lake (request and output token throughput)."""
    import pyarrow.parquet as pq

    columns = ["status", "request_throughput", "output_throughput"]
    runs = pq.read_table(Path(lake_dir) / "runs", columns=columns).to_pylist()
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        raise SystemExit(f"no ok run in {lake_dir}")
    return max(r["request_throughput"] for r in ok), max(r["output_throughput"] for r in ok)


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rates", default="50,100,200,400,800,1600,3200")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--guidellm", type=Path)
    parser.add_argument("--lake", help="a local lake directory: its fastest ok run is the reference")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    ours = ceiling("driver + vllm bench serve", vllm_step, rates, args.runs, args.seconds)
    if args.guidellm:
        theirs = ceiling(
            "GuideLLM", lambda r, s, w: guidellm_step(args.guidellm, r, s, w), rates, args.runs, args.seconds
        )
        if theirs[0]:
            print(f"\nratio (driver + vllm bench serve / GuideLLM): {ours[0] / theirs[0]:.2f}x requests/s")
    if args.lake:
        rps, tps = fastest_in(args.lake)
        print(
            f"\nfastest server in {args.lake}: {rps:.2f} requests/s, {tps:.0f} output tokens/s; ceiling is "
            f"{ours[0] / rps:.0f}x / {ours[1] / tps:.0f}x it (target {TARGET_FACTOR}x)"
        )


if __name__ == "__main__":
    main()
