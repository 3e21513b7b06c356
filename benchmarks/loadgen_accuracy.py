"""Measurement overhead: TTFT and E2EL as the pipeline reports them vs the delays a zero-work server injects.

Run: .venv/bin/python benchmarks/loadgen_accuracy.py [--runs 3] [--concurrency 1,16,128]

The server (benchmarks/zero_server.py, pinned to CPU 1) waits exactly --ttft-ms before the first token and
--itl-ms between tokens, so every request's true TTFT is ttft_ms and its true E2EL is
ttft_ms + (output_len - 1) * itl_ms. The pipeline is the real one: the Driver runs `vllm bench serve`
(pinned to CPU 0), the raw evidence is ingested into a local lake, and the errors are computed from the
`requests` table's ttft_s / e2el_s. For each concurrency: the median and p99 of the per-request error
(reported - true, in ms), median over the runs. Target (issue 8): median error under 1 ms at concurrency 16.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accelbench.campaign.spec import LoadPlan
from zero_pipeline import run_pipeline, spec, zero_server

TARGET_MS = 1.0


def one_run(
    concurrency: int, ttft_ms: float, itl_ms: float, output_len: int, prompts: int, work: Path
) -> dict:
    load = LoadPlan(
        input_len=32,
        output_len=output_len,
        concurrency=(concurrency,),
        prompts_per_level=prompts,
        warmups=4,
        seed=1,
    )
    with zero_server(ttft_ms, itl_ms) as (url, pid):
        lake, _ = run_pipeline(spec(load, f"accuracy-c{concurrency}"), url, pid, work)
        with urllib.request.urlopen(f"{url}/stats", timeout=10) as resp:
            applied = np.array(json.loads(resp.read())["applied"][load.warmups :]) * 1000
    requests = lake.read("requests", columns=["ttft_s", "e2el_s", "success", "output_tokens"]).to_pydict()
    assert all(requests["success"]) and set(requests["output_tokens"]) == {output_len}, "a request failed"
    true_e2el = ttft_ms + (output_len - 1) * itl_ms
    ttft_err = np.array(requests["ttft_s"]) * 1000 - ttft_ms
    e2el_err = np.array(requests["e2el_s"]) * 1000 - true_e2el
    # The server's own lateness (asyncio wakes up late), and what is left for the pipeline (medians).
    server_ttft = float(np.median(applied[:, 0])) - ttft_ms
    server_e2el = float(np.median(applied[:, 1])) - true_e2el
    return {
        "requests": len(ttft_err),
        "server_ttft": server_ttft,
        "server_e2el": server_e2el,
        "pipeline_ttft": float(np.median(ttft_err)) - server_ttft,
        "pipeline_e2el": float(np.median(e2el_err)) - server_e2el,
        "ttft_median": float(np.median(ttft_err)),
        "ttft_p99": float(np.percentile(ttft_err, 99)),
        "e2el_median": float(np.median(e2el_err)),
        "e2el_p99": float(np.percentile(e2el_err, 99)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", default="1,16,128")
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--itl-ms", type=float, default=5.0)
    parser.add_argument("--output-len", type=int, default=16)
    args = parser.parse_args()
    print(
        f"injected: TTFT {args.ttft_ms:g} ms, ITL {args.itl_ms:g} ms, {args.output_len} tokens -> "
        f"E2EL {args.ttft_ms + (args.output_len - 1) * args.itl_ms:g} ms; {args.runs} runs each"
    )
    print(
        f"{'concurrency':>11} {'requests':>8} | {'TTFT err median':>15} {'p99':>8} | "
        f"{'E2EL err median':>15} {'p99':>8} | {'server late TTFT':>16} {'E2EL':>6} | "
        f"{'pipeline TTFT':>13} {'E2EL':>6}   (ms, median over runs)"
    )
    verdict = None
    for c in (int(x) for x in args.concurrency.split(",")):
        prompts = max(200, 8 * c)
        runs = []
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix=f"acc-c{c}-{i}-") as tmp:
                runs.append(one_run(c, args.ttft_ms, args.itl_ms, args.output_len, prompts, Path(tmp)))
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"{c:>11} {int(med['requests']):>8} | {med['ttft_median']:>15.3f} {med['ttft_p99']:>8.3f} | "
            f"{med['e2el_median']:>15.3f} {med['e2el_p99']:>8.3f} | {med['server_ttft']:>16.3f} "
            f"{med['server_e2el']:>6.3f} | {med['pipeline_ttft']:>13.3f} {med['pipeline_e2el']:>6.3f}"
        )
        if c == 16:
            verdict = max(abs(med["ttft_median"]), abs(med["e2el_median"]))
    if verdict is not None:
        print(
            f"target: median error under {TARGET_MS:g} ms at concurrency 16: "
            f"{'met' if verdict < TARGET_MS else 'MISSED'} ({verdict:.3f} ms)"
        )


if __name__ == "__main__":
    main()
