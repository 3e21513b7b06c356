"""How closely the pinned client keeps a timed trace's schedule: the shipped trace (or one given) replayed
through the real pipeline (Driver -> `vllm bench serve --dataset-name timed_trace` -> raw -> ingest) against
the zero-work server at each time-scale, and each request's send lag: its send stamp (the lake's
`start_offset_s`, from the level's first send) minus the trace's timestamp / scale. Prints the median, p99
and largest lag and the achieved rate against the trace's at each scale.

    PYTHONPATH=plugins .venv/bin/python benchmarks/trace_replay_lag.py --scales 1 2 4
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
from accelbench.core.spec import LoadPlan
from accelbench.core.workloads import traced
from accelbench.traces.timed_trace import identify, parse, shipped
from zero_pipeline import run_pipeline, spec, zero_server


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trace", type=Path, default=shipped())
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    args = parser.parse_args()
    text = args.trace.read_text()
    trace, requests = identify(text, args.trace.stem, str(args.trace)), parse(text)
    workload = traced(trace)
    load = LoadPlan(
        input_len=workload.input_len,
        output_len=workload.output_len,
        workload=workload,
        time_scales=tuple(args.scales),
        prompts_per_level=trace.requests,
        warmups=2,
    )
    print(f"trace: {trace.words()}")
    with zero_server(args.ttft_ms, 1.0) as (url, pid), tempfile.TemporaryDirectory() as work:
        lake, envelope = run_pipeline(spec(load, "trace-lag"), url, pid, Path(work))
        assert envelope.failure is None, envelope.failure
        for level in envelope.levels:
            rows = lake.read("requests", ds.field("run_id") == level.run_id, columns=["start_offset_s"])
            sent = np.sort(np.array(rows["start_offset_s"].to_pylist()))
            due = np.array([r.timestamp for r in requests]) / level.level_value
            lag_ms = (sent - due) * 1000.0
            print(
                f"{level.level_value:g}x: {len(sent)} requests, send lag median {np.median(lag_ms):.2f} ms, "
                f"p99 {np.percentile(lag_ms, 99):.2f} ms, max {lag_ms.max():.2f} ms "
                f"(min {lag_ms.min():.2f}); "
                f"rate {level.achieved_rate:.4g} req/s for {level.requested_rate:.4g}"
            )


if __name__ == "__main__":
    main()
