"""bf16 against its quantized checkpoints (W8A8, W4A8, W4A16: accelbench.local.quantized_model) of the real
model, side by side in one run on this host: the weights on disk and planning's prediction of them (the
sizing's `weight_bytes`, which counts no scales), the server's memory (peak RSS and anonymous RSS while it
served), seconds to healthy and their phases (the lake's `startups` row), and the output throughput and
median TPOT of one level, with t intervals over its repeats. Also what the server's log said it ran (the
kernel), so a row can never claim a scheme the server did not serve.

Run: PYTHONPATH=plugins .venv/bin/python benchmarks/quantized_serving.py [--repeats 3] [--prompts 16]
     [--checkpoints bf16 W8A8 W4A8 W4A16]

Needs .venv-vllm and .venv-quant (scripts/vllm-env.sh, scripts/quant-env.sh). Each server is the suite's own
LocalServer (eager mode, engine pinned to one CPU where there are two), one configuration after another:
run nothing beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
MIB = 2**20


def main() -> None:
    from accelbench.core.intervals import mean_interval
    from accelbench.core.spec import BenchmarkSpec, LoadPlan
    from accelbench.loadgen.bench_client import BenchClient
    from accelbench.loadgen.driver import Driver
    from accelbench.local import quantized_model as qm
    from accelbench.local import real_model as rm
    from accelbench.local.server import LocalServer, Pinning
    from accelbench.sizing.model_config import load_model_shape

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--checkpoints", nargs="+", default=["bf16", *(s.upper() for s in qm.SCHEMES)])
    args = parser.parse_args()

    source = rm.folder(cache=REPO / ".cache" / "real-model", python=VLLM_PYTHON)
    made = {"bf16": source} | {s.upper(): qm.folder(s, source) for s in qm.SCHEMES}
    folders = {name: made[name] for name in args.checkpoints}
    load = LoadPlan(
        input_len=128,
        output_len=32,
        concurrency=(args.concurrency,),
        prompts_per_level=args.prompts,
        repeats=args.repeats,
        warmups=4,
        seed=1,
    )
    pinning = Pinning.from_env()
    print(
        f"real model {rm.MODEL_NAME}, concurrency {args.concurrency}, {args.repeats} repeats of "
        f"{args.prompts} prompts (128 in, 32 out), pinning {pinning.describe() if pinning else None}\n"
    )
    header = (
        "| checkpoint | weights on disk | planned weights | peak RSS | peak anon RSS | to healthy | "
        "output tok/s | p50 TPOT ms | server's log |"
    )
    rows = [header, "|" + "---|" * 9]
    phases = [
        "| checkpoint | to healthy | process start | model load | engine init | API start | vLLM: weights | "
        "vLLM: engine init |",
        "|" + "---|" * 8,
    ]
    vllm = str(VLLM_PYTHON.parent / "vllm")
    with (
        tempfile.TemporaryDirectory() as tmp,
        BenchClient(vllm, pinning.client if pinning else None) as client,
    ):
        for name, folder in folders.items():
            spec = BenchmarkSpec(server=rm.server_spec(folder), load=load, campaign_id="quantized-serving")
            work = Path(tmp) / name
            with LocalServer(spec.server, work / "server", python=VLLM_PYTHON, pinning=pinning) as server:
                driver = Driver(
                    spec,
                    server.url,
                    work / "raw",
                    vllm=vllm,
                    server_pid=server.process.pid if server.process else None,
                    client=client,
                )
                envelope = driver.run()
                said = server.reported_quantization()
            if envelope.failure:
                raise SystemExit(f"{name}: {envelope.failure}")
            measured = [r for r in envelope.levels if r.result_file and not r.recheck]
            results = [json.loads((driver.spec_dir / str(r.result_file)).read_text()) for r in measured]
            throughput = mean_interval([r["output_throughput"] for r in results])
            tpot = mean_interval([r["median_tpot_ms"] for r in results])
            rss = max(r.memory_peaks.get("server_rss_bytes", 0) for r in envelope.levels)
            anon = max(r.memory_peaks.get("server_rss_anon_bytes", 0) for r in envelope.levels)
            disk = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
            planned = load_model_shape(str(folder)).weight_bytes()
            rows.append(
                f"| {name} | {disk / MIB:.0f} MiB | {planned / MIB:.0f} MiB | {rss / MIB:.0f} MiB | "
                f"{anon / MIB:.0f} MiB | {server.startup_s:.1f} s | {_ci(throughput, '.1f')} | "
                f"{_ci(tpot, '.1f')} | {said} |"
            )
            print(rows[-1], flush=True)
            up = server.startup
            # accelbench.core.startup_phases: the start-up's phases, as the lake's startups row
            if up is not None:
                cells = [
                    up.phases.get(k)
                    for k in ("process_start_s", "model_load_s", "engine_init_s", "api_start_s")
                ]
                cells += [up.figures.get("vllm_weights_load_s"), up.figures.get("vllm_engine_init_s")]
                shown = " | ".join("-" if c is None else f"{c:.2f} s" for c in cells)
                phases.append(f"| {name} | {up.ready_s:.2f} s | {shown} |")
    print("\n" + "\n".join(rows))
    print("\nstart-up in phases (accelbench.core.startup_phases):\n" + "\n".join(phases))
    print(
        f"\nintervals: 95% Student t over {args.repeats} repeats; peaks over the repeats "
        f"(RSS counts the mmapped weights' page cache, anon RSS the server's own memory); "
        "to healthy: one start each."
    )


def _ci(interval: object, fmt: str) -> str:
    from accelbench.core.intervals import Interval

    assert isinstance(interval, Interval) and interval.estimate is not None
    ends = ", ".join("-" if v is None else f"{v:{fmt}}" for v in (interval.low, interval.high))
    return f"{interval.estimate:{fmt}} [{ends}]"


if __name__ == "__main__":
    main()
