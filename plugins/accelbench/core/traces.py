"""Timed traces: a day of a user's traffic as vLLM's client replays it (`vllm bench serve --dataset-name
timed-trace`: one JSON object per line with `timestamp` in seconds, `input_length`, `output_length` and
`hash_ids`, each hash id standing for `chunk` prompt tokens, so that requests sharing a prefix share its
leading ids). No prompt text is ever kept: lengths and hash ids only.

Here: reading a trace with every line checked (a bad line is refused with its number and field), a trace's
identity (the lake records it on every run row), and traces made from what users have: a usage log (CSV or
JSONL with a timestamp and token counts, the columns named by the user), the lake's `requests` rows of an
earlier run, and a generated day for the demo and the tests (`generated_day`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
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


def _unique_ids(requests: Iterable[tuple[float, int, int]], chunk: int) -> list[TraceRequest]:
    """Requests whose prompts share nothing (what a usage log or a requests row can tell): each its own
    hash ids, in order, covering its input."""
    out, next_id = [], 0
    for ts, inp, outp in requests:
        n = math.ceil(inp / chunk)
        out.append(TraceRequest(ts, inp, outp, tuple(range(next_id, next_id + n))))
        next_id += n
    return out


def _seconds(value: object, row: int, field: str) -> float:
    """A timestamp of a usage log: epoch seconds (a number) or ISO 8601 (with a zone, or taken as UTC)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            pass
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"row {row}: {field}", value, "epoch seconds or an ISO 8601 time") from None
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    raise ConfigError(f"row {row}: {field}", value, "missing: every request needs its time")


def _tokens(value: object, row: int, field: str) -> int:
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        number = None
    if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number):
        raise ConfigError(f"row {row}: {field}", value, "a token count")
    if number < 1 or number != int(number):
        raise ConfigError(f"row {row}: {field}", value, "a whole number of tokens, 1 or more")
    return int(number)


def from_usage(
    rows: Iterable[Mapping[str, object]],
    timestamp: str,
    prompt_tokens: str,
    completion_tokens: str,
    window_s: float | None = None,
    chunk: int = CHUNK,
) -> list[TraceRequest]:
    """A usage log's rows (a CSV's or a JSONL's, in the file's order; row 1 = the first request) as a trace:
    the columns named by the user; times in order (an earlier time than the row above is refused: sort the
    log first, so that nothing is reordered silently); the first at 0; with `window_s`, only the busiest
    window. Prompts share nothing (a usage log does not say which do)."""
    found: list[tuple[float, int, int]] = []
    for number, row in enumerate(rows, start=1):
        ts = _seconds(row.get(timestamp), number, timestamp)
        if found and ts < found[-1][0]:
            raise ConfigError(f"row {number}: {timestamp}", row.get(timestamp), "earlier than the row above")
        inp = _tokens(row.get(prompt_tokens), number, prompt_tokens)
        found.append((ts, inp, _tokens(row.get(completion_tokens), number, completion_tokens)))
    if not found:
        raise ConfigError("usage log", "", "no rows")
    t0 = found[0][0]
    trace = _unique_ids(((ts - t0, i, o) for ts, i, o in found), chunk)
    return busiest(trace, window_s) if window_s else trace


def from_requests(rows: Iterable[Mapping[str, object]], chunk: int = CHUNK) -> list[TraceRequest]:
    """The lake's `requests` rows of one run as a trace: each request's send time (`start_offset_s`) and its
    token counts, in send order; a failed request (no output) keeps its prompt and 1 output token."""
    found: list[tuple[float, int, int]] = []
    for number, row in enumerate(rows, start=1):  # row numbers in the order given
        ts = row.get("start_offset_s")
        if isinstance(ts, bool) or not isinstance(ts, int | float) or ts < 0:
            raise ConfigError(f"row {number}: start_offset_s", ts, "the request's send time, 0 or more")
        inp = _tokens(row.get("input_tokens"), number, "input_tokens")
        out = row.get("output_tokens")
        found.append((float(ts), inp, out if isinstance(out, int) and out > 0 else 1))
    if not found:
        raise ConfigError("requests", "", "no rows for this run")
    found.sort(key=lambda r: r[0])
    t0 = found[0][0]
    return _unique_ids(((ts - t0, i, o) for ts, i, o in found), chunk)


def generated_day(
    seed: int = 0, minutes: float = 0.5, rate: float = 2.0, chunk: int = CHUNK
) -> list[TraceRequest]:
    """A day of traffic squeezed into `minutes`: Poisson arrivals at a rate following a daily shape around
    `rate` req/s (a night trough, a morning rise, an afternoon peak), three bursts at 4x, and prompts that
    start with one of four shared system prompts (their hash ids shared) before their own part; the first
    arrival at 0. Deterministic for a seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    span = minutes * 60.0
    system = [tuple(range(1000 * (k + 1), 1000 * (k + 1) + n)) for k, n in enumerate((8, 16, 24, 32))]
    times: list[float] = []
    t = 0.0
    bursts = [(f * span, 0.02 * span) for f in (0.3, 0.55, 0.8)]
    while True:
        hour = 24.0 * t / span
        peak = 0.7 * math.exp(-(((hour - 14.0) / 4.0) ** 2))
        shape = 0.3 + peak + 0.4 * math.exp(-(((hour - 9.0) / 2.0) ** 2))
        now = rate * shape * (4.0 if any(s <= t < s + d for s, d in bursts) else 1.0)
        t += float(rng.exponential(1.0 / now))
        if t >= span:
            break
        times.append(t)
    out, next_id = [], 100_000
    for ts in (x - times[0] for x in times):
        prefix = system[int(rng.integers(len(system)))]
        own = int(rng.integers(1, 8))
        output = int(rng.integers(8, 64))
        ids = (*prefix, *range(next_id, next_id + own))
        next_id += own
        out.append(TraceRequest(round(ts, 3), len(ids) * chunk, output, ids))
    return out


def read_rows(path: Path) -> list[dict[str, object]]:
    """A usage log file's rows (`rows_of`)."""
    return rows_of(path.read_text(), path.name)


def rows_of(text: str, name: str) -> list[dict[str, object]]:
    """A usage log's rows: a CSV with a header row, or JSONL (a name ending `.jsonl` or `.json`), in file
    order; a line that is not a JSON object is refused with its row number."""
    if name.lower().endswith((".jsonl", ".json")):
        rows: list[dict[str, object]] = []
        for number, line in enumerate((x for x in text.splitlines() if x.strip()), start=1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"row {number}", line[:80], f"not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise ConfigError(f"row {number}", line[:80], "a JSON object per line")
            rows.append(row)
        return rows
    return [dict(r) for r in csv.DictReader(io.StringIO(text))]


def shipped() -> Path:
    """The generated day the project ships (`generated_day()` written by `accelbench trace generate`), for
    the demo and the tests."""
    return Path(__file__).parent / "data" / "generated-day.jsonl"
