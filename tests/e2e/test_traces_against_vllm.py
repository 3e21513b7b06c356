"""The traces `accelbench.traces` writes, read by vLLM's own timed-trace reader (the installed vLLM's
`vllm.benchmarks.datasets.TimedTrace`, the class `vllm bench serve --dataset-name timed-trace` uses) with the
tiny model's tokenizer: every request's prompt length, output length and send time as the trace says, and
requests sharing hash ids sharing their prompts' leading tokens."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from accelbench.traces.timed_trace import parse, shipped

pytestmark = pytest.mark.vllm

READ = """
import json, sys
from transformers import AutoTokenizer
from vllm.benchmarks.datasets.datasets import TimedTrace

path, model, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
kw = {"timed_trace_sec_multiplier": 1 / scale, "timed_trace_label_timestamp": "timestamp",
      "timed_trace_label_input_length": "input_length", "timed_trace_label_output_length": "output_length",
      "timed_trace_label_hash_ids": "hash_ids"}
trace = TimedTrace(dataset_path=path, random_seed=0, **kw)
samples = trace.sample(AutoTokenizer.from_pretrained(model), num_requests=10**6)
print(json.dumps([[s.prompt_len, s.expected_output_len, s.timestamp, s.prompt[:128]] for s in samples]))
"""


def test_vllms_reader_sends_the_shipped_trace_as_written(vllm_python: Path, tiny_model: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    out = subprocess.run(
        [str(vllm_python), "-c", READ, str(shipped()), str(tiny_model), "2"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    read = json.loads(out.stdout.strip().splitlines()[-1])
    trace = parse(shipped().read_text())
    assert len(read) == len(trace)
    for (prompt_len, output_len, timestamp, _), r in zip(read, trace, strict=True):
        assert (prompt_len, output_len) == (r.input_length, r.output_length)
        assert timestamp == pytest.approx(r.timestamp / 2)  # a level at 2x: the multiplier 1/2
    # Two requests of the same system prompt (their first 8 ids shared) share their first 128 tokens.
    first = {}
    for (_, _, _, head), r in zip(read, trace, strict=True):
        first.setdefault(r.hash_ids[:8], head)
        assert head == first[r.hash_ids[:8]]
    assert len(first) > 1 and len({json.dumps(h) for h in first.values()}) == len(first)
