"""Timed traces: a day of a user's traffic as vLLM's client replays it (`vllm bench serve --dataset-name
timed-trace`: one JSON object per line with `timestamp` in seconds, `input_length`, `output_length` and
`hash_ids`, each hash id standing for `chunk` prompt tokens, so that requests sharing a prefix share its
leading ids). No prompt text is ever kept: lengths and hash ids only.

Here: reading a trace with every line checked (a bad line is refused with its number and field), a trace's
identity (the lake records it on every run row), its busiest window, and the day the project ships
(`shipped`). Traces made from what users have are in `accelbench.traces.builders`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from accelbench.core.workloads import TRACE_CHUNK, TraceIdentity
from accelbench.errors import ConfigError

CHUNK = TRACE_CHUNK  # tokens per hash id: vLLM's default (`--timed-trace-chunk-hash-size`)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"  # a stored trace's name (`traces/<name>.jsonl`)
PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class TraceRequest:
    timestamp: float  # seconds from the trace's start
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]

    def line(self) -> str:
        record = {
            "timestamp": round(self.timestamp, 6),
            "input_length": self.input_length,
            "output_length": self.output_length,
            "hash_ids": list(self.hash_ids),
        }
        return json.dumps(record, separators=(",", ":"))


def dumps(requests: Iterable[TraceRequest]) -> str:
    """The trace as JSONL, the shape vLLM's client reads."""
    return "".join(r.line() + "\n" for r in requests)


def _where(line: int, field: str) -> str:
    return f"line {line}: {field}"


def _length(value: object, line: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(_where(line, field), value, "a whole number of tokens, 1 or more")
    return value


def parse(text: str, chunk: int = CHUNK) -> list[TraceRequest]:
    """Every line of a JSONL trace, checked: a JSON object; `timestamp` a number of seconds, 0 or more, never
    before the line above; lengths whole and positive; `hash_ids` integers covering the prompt (at least
    ceil(input_length / chunk) of them, or vLLM would send a shorter prompt than the trace says). A bad line
    is refused with its number (1 = the first) and field."""
    out: list[TraceRequest] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(_where(number, "json"), raw[:80], f"not JSON ({exc.msg})") from None
        if not isinstance(entry, dict):
            raise ConfigError(_where(number, "json"), raw[:80], "a JSON object per line")
        ts = entry.get("timestamp")
        if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts) or ts < 0:
            raise ConfigError(_where(number, "timestamp"), ts, "seconds from the trace's start, 0 or more")
        if out and ts < out[-1].timestamp:
            why = f"before the line above ({out[-1].timestamp}): a trace is in time order"
            raise ConfigError(_where(number, "timestamp"), ts, why)
        inp = _length(entry.get("input_length"), number, "input_length")
        outp = _length(entry.get("output_length"), number, "output_length")
        ids = entry.get("hash_ids")
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ConfigError(_where(number, "hash_ids"), ids, "a list of integers")
        if len(ids) * chunk < inp:
            why = f"{len(ids)} ids of {chunk} tokens cover {len(ids) * chunk}, less than input_length {inp}"
            raise ConfigError(_where(number, "hash_ids"), len(ids), why)
        out.append(TraceRequest(float(ts), inp, outp, tuple(ids)))
    if not out:
        raise ConfigError("trace", "", "no requests")
    return out


def identity(text: str, requests: Sequence[TraceRequest]) -> dict[str, float | int | str]:
    """What the lake records of a trace on every run row: its sha256 (of the file's bytes), request count,
    duration (first to last arrival), mean arrival rate, and its lengths' percentiles."""
    times = [r.timestamp for r in requests]
    duration = times[-1] - times[0]
    out: dict[str, float | int | str] = {
        "trace_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "trace_requests": len(requests),
        "trace_duration_s": duration,
        "trace_mean_rate": (len(requests) - 1) / duration if duration > 0 else 0.0,
    }
    import numpy as np  # here: the trace DAG's file imports this module at parse time

    for name, values in (
        ("input", [r.input_length for r in requests]),
        ("output", [r.output_length for r in requests]),
    ):
        for q, v in zip(PERCENTILES, np.percentile(values, PERCENTILES), strict=True):
            out[f"trace_{name}_p{q}"] = float(v)
    return out


def identify(text: str, name: str, uri: str) -> TraceIdentity:
    """A trace file's identity (`identity`) with its longest prompt and output, every line checked."""
    requests = parse(text)
    figures = identity(text, requests)
    longest = {
        "max_input": max(r.input_length for r in requests),
        "max_output": max(r.output_length for r in requests),
    }
    named = {k.removeprefix("trace_"): v for k, v in figures.items()}
    return TraceIdentity.model_validate({"name": name, "uri": uri, **named, **longest})


def busiest(requests: Sequence[TraceRequest], window_s: float) -> list[TraceRequest]:
    """The `window_s` seconds holding the most arrivals (the earliest such window), its first arrival at 0."""
    import numpy as np

    if window_s <= 0:
        raise ConfigError("window_s", window_s, "seconds, above 0")
    times = np.array([r.timestamp for r in requests])
    ends = np.searchsorted(times, times + window_s, side="left")
    start = int(np.argmax(ends - np.arange(len(times))))
    chosen = requests[start : int(ends[start])]
    t0 = chosen[0].timestamp
    return [TraceRequest(r.timestamp - t0, r.input_length, r.output_length, r.hash_ids) for r in chosen]


def shipped() -> Path:
    """The generated day the project ships (`generated_day()` written by `accelbench trace generate`), for
    the demo and the tests."""
    return Path(__file__).parent / "data" / "generated-day.jsonl"
