"""Timed traces made from what users have (`accelbench.traces.timed_trace` is the format): a usage log (CSV
or JSONL with a timestamp and token counts, the columns named by the user: `from_usage`, its rows read by
`read_rows`/`rows_of`), the lake's `requests` rows of an earlier run (`from_requests`), and a generated day
for the demo and the tests (`generated_day`)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from accelbench.errors import ConfigError
from accelbench.traces.timed_trace import CHUNK, TraceRequest, busiest


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
