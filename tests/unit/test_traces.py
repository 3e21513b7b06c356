"""Timed traces (accelbench.traces): vLLM's timed-trace shape, every bad line or row refused with its
number and field, a trace's identity, and traces made from a usage log and from the lake's requests."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from accelbench.errors import ConfigError
from accelbench.traces.builders import from_requests, from_usage, generated_day
from accelbench.traces.timed_trace import CHUNK, busiest, dumps, identity, parse, shipped


def _line(ts: object, inp: object = 32, out: object = 8, ids: object = (1, 2)) -> str:
    return json.dumps({"timestamp": ts, "input_length": inp, "output_length": out, "hash_ids": list(ids)})


def test_a_trace_round_trips_and_its_identity_is_computed_from_it() -> None:
    text = "\n".join([_line(0), _line(0.5, 16, 4, (1,)), _line(2.0, 48, 16, (1, 2, 3))]) + "\n"
    trace = parse(text)
    assert [(r.timestamp, r.input_length, r.output_length, r.hash_ids) for r in trace] == [
        (0.0, 32, 8, (1, 2)),
        (0.5, 16, 4, (1,)),
        (2.0, 48, 16, (1, 2, 3)),
    ]
    assert parse(dumps(trace)) == trace
    found = identity(text, trace)
    assert found["trace_requests"] == 3 and found["trace_duration_s"] == 2.0
    assert found["trace_mean_rate"] == 1.0  # 2 intervals in 2 s
    assert found["trace_input_p50"] == 32.0 and found["trace_output_p99"] == pytest.approx(15.84)
    assert (
        found["trace_sha256"]
        == identity(text, trace)["trace_sha256"]
        != identity(text + "\n", trace)["trace_sha256"]
    )


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        ([_line(0), "{not json"], "line 2: json"),
        ([_line(0), "[1, 2]"], "line 2: json"),
        ([_line(None)], "line 1: timestamp"),
        ([_line(-1)], "line 1: timestamp"),
        ([_line(1.0), _line(0.5)], "line 2: timestamp"),  # unsorted
        ([_line(0, inp=-3)], "line 1: input_length"),
        ([_line(0, out=0)], "line 1: output_length"),
        ([_line(0, inp=1.5)], "line 1: input_length"),
        ([_line(0, ids=("a",))], "line 1: hash_ids"),
        ([_line(0, inp=40, ids=(1, 2))], "line 1: hash_ids"),  # 2 x 16 tokens cover less than 40
    ],
)
def test_a_bad_line_is_refused_with_its_number_and_field(lines: list[str], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse("\n".join(lines))
    assert err.value.field == field


def _csv(rows: list[dict[str, object]]) -> list[dict[str, str]]:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return list(csv.DictReader(io.StringIO(buf.getvalue())))


def test_a_usage_log_becomes_a_trace_without_its_text() -> None:
    log = _csv(
        [
            {"created": "2026-12-01T10:00:00Z", "prompt": 100, "completion": 20, "text": "secret prompt"},
            {"created": "2026-12-01T10:00:01.5Z", "prompt": 17, "completion": 3, "text": "another"},
            {"created": "2026-12-01T10:00:04Z", "prompt": 16, "completion": 1, "text": "x"},
        ]
    )
    trace = from_usage(log, "created", "prompt", "completion")
    assert [(r.timestamp, r.input_length, r.output_length) for r in trace] == [
        (0.0, 100, 20),
        (1.5, 17, 3),
        (4.0, 16, 1),
    ]
    assert [len(r.hash_ids) for r in trace] == [7, 2, 1]  # ceil(input / 16), none shared
    assert len({i for r in trace for i in r.hash_ids}) == 10
    assert "secret" not in dumps(trace)
    assert parse(dumps(trace)) == trace  # what it writes, vLLM's client and `parse` read back
    epoch = [{"t": 1700000000 + r.timestamp, "p": r.input_length, "c": r.output_length} for r in trace]
    assert from_usage(epoch, "t", "p", "c") == trace


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"created": ""}, "row 2: created"),  # missing timestamp
        ({"created": "yesterday"}, "row 2: created"),
        ({"prompt": "-5"}, "row 2: prompt"),  # negative length
        ({"completion": "2.5"}, "row 2: completion"),
        ({"created": "2026-12-01T09:59:00Z"}, "row 2: created"),  # unsorted
    ],
)
def test_a_bad_usage_row_is_refused_with_its_row_number(bad: dict[str, str], field: str) -> None:
    rows = [
        {"created": "2026-12-01T10:00:00Z", "prompt": "10", "completion": "2"},
        {"created": "2026-12-01T10:00:01Z", "prompt": "10", "completion": "2"} | bad,
    ]
    with pytest.raises(ConfigError) as err:
        from_usage(rows, "created", "prompt", "completion")
    assert err.value.field == field


def test_the_busiest_window_is_kept_and_starts_at_zero() -> None:
    rows = [{"t": t, "p": 16, "c": 1} for t in (0, 10, 20, 21, 21.5, 22, 40)]
    trace = from_usage(rows, "t", "p", "c", window_s=3)
    assert [r.timestamp for r in trace] == [0.0, 1.0, 1.5, 2.0]
    with pytest.raises(ConfigError):
        busiest(trace, 0)


def test_the_lakes_requests_of_a_run_become_a_trace_in_send_order() -> None:
    rows = [
        {"start_offset_s": 0.25, "input_tokens": 32, "output_tokens": 8, "success": True},
        {"start_offset_s": 0.0, "input_tokens": 20, "output_tokens": 4, "success": True},
        {"start_offset_s": 0.5, "input_tokens": 32, "output_tokens": None, "success": False},
    ]
    trace = from_requests(rows)
    assert [(r.timestamp, r.input_length, r.output_length) for r in trace] == [
        (0.0, 20, 4),
        (0.25, 32, 8),
        (0.5, 32, 1),
    ]
    with pytest.raises(ConfigError, match="row 1: input_tokens"):
        from_requests([{"start_offset_s": 0.0, "input_tokens": 0, "output_tokens": 1}])


def test_the_generated_day_has_its_shape_bursts_and_shared_prefixes() -> None:
    day = generated_day(seed=0, minutes=2.0, rate=2.0)
    assert day == generated_day(seed=0, minutes=2.0, rate=2.0) and parse(dumps(day)) == day
    assert day[0].timestamp == 0.0
    times = np.array([r.timestamp for r in day])
    per_slot = np.histogram(times, bins=24, range=(0, 120))[0]  # one bin per "hour"
    assert per_slot[13:16].mean() > 2 * per_slot[0:4].mean()  # the afternoon peak over the night
    prefixes = {r.hash_ids[:8] for r in day}
    assert len(prefixes) <= 4 < len(day)  # every prompt starts with one of four shared system prompts
    assert all(r.input_length == len(r.hash_ids) * CHUNK for r in day)


def test_the_shipped_trace_is_the_generated_day_of_seed_0() -> None:
    """Its provenance: `accelbench trace generate --out <it>` (seed 0, half a minute, 2 req/s) wrote it."""
    text = shipped().read_text()
    assert text == dumps(generated_day())
    assert 20 <= identity(text, parse(text))["trace_requests"] <= 60
