"""Planning the trace workload (issue 32): the trace is read and checked when the campaign is planned, its
identity and lengths go with its specs, its levels are time-scales, and what a benchmark pod could not read,
what the model's context could not hold and a trace too short for a search are refused, each naming its
field (a failed level would say it after a node was bought)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import boto3
import pytest
from accelbench.core.levels import levels
from accelbench.lake.store import Lake
from accelbench.lake.traces import store_trace
from accelbench.traces.timed_trace import TraceRequest, dumps, identify, shipped

from tests.support.planning import plan, problems

TYPES = ["r8g.4xlarge"]


def _trace(tmp_path: Path, lengths: list[tuple[int, int]], gap_s: float = 0.5) -> Path:
    path = tmp_path / "mine.jsonl"
    rows = [
        TraceRequest(i * gap_s, inp, out, tuple(range(100 * i, 100 * i + -(-inp // 16))))
        for i, (inp, out) in enumerate(lengths)
    ]
    path.write_text(dumps(rows))
    return path


def test_a_trace_workload_plans_its_time_scales_with_the_trace_s_identity() -> None:
    trace = str(shipped())
    planned = plan(instance_types=TYPES, workloads=["fixed", "trace"], trace=trace, time_scales=[1, 2])
    fixed, replay = planned.specs
    expected = identify(shipped().read_text(), "generated-day", trace)
    assert replay.load.workload is not None and replay.load.workload.trace == expected
    # every request of the trace, each level; its levels the time-scales, no concurrency or rate
    assert replay.load.prompts_per_level == expected.requests == 31
    assert [(lv.kind, lv.value, lv.key) for lv in levels(replay)] == [("scale", 1, "x1"), ("scale", 2, "x2")]
    assert [lv.kind for lv in levels(fixed)] == ["concurrency"] * 3 and fixed.load.time_scales == ()
    # the server's context holds the trace's longest prompt + output (+ the planner's headroom)
    assert replay.server.max_model_len >= expected.max_input + expected.max_output
    # the fixed workload's load plan is the one it was before traces existed (its key unchanged by the field)
    assert "time_scales" not in fixed.load.model_dump()
    assert plan(instance_types=TYPES).specs[0].load == fixed.load


def test_the_same_trace_read_from_another_place_is_the_same_matrix_point(tmp_path: Path) -> None:
    """ "Already measured" compares matrix keys: a trace is its content, wherever a campaign read it."""
    copy = tmp_path / "generated-day.jsonl"
    copy.write_text(shipped().read_text())
    here, there = (
        plan(instance_types=TYPES, workloads=["trace"], trace=str(p)).specs[0] for p in (shipped(), copy)
    )
    assert here.matrix_key == there.matrix_key and here.spec_id != there.spec_id  # the spec says where
    copy.write_text(shipped().read_text().replace('"output_length":', '"output_length": ', 1))  # other bytes
    changed = plan(instance_types=TYPES, workloads=["trace"], trace=str(copy)).specs[0]
    assert changed.matrix_key != here.matrix_key


def test_a_stored_trace_is_named_by_its_name_in_the_lake(tmp_path: Path, monkeypatch) -> None:
    lake = Lake(str(tmp_path / "lake"))
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", lake.uri)
    from accelbench.traces.timed_trace import parse

    stored = store_trace(lake, "busy-hour", parse(shipped().read_text()))
    replay = plan(instance_types=TYPES, workloads=["trace"], trace="busy-hour").specs[0]
    assert replay.load.workload is not None and replay.load.workload.trace is not None
    assert replay.load.workload.trace.uri == stored["uri"]
    assert replay.load.workload.trace.sha256 == stored["trace_sha256"]
    found = problems(instance_types=TYPES, workloads=["trace"], trace="no-such-trace")
    assert set(found) == {"trace"} and "cannot read it" in found["trace"]


def test_kubernetes_mode_refuses_a_trace_its_pod_cannot_read(tmp_path: Path, monkeypatch) -> None:
    path = str(_trace(tmp_path, [(64, 8)] * 4))
    fields = {"instance_types": TYPES, "workloads": ["trace"], "trace": path}
    assert len(plan(**fields, execution_mode="local").specs) == 1
    found = problems(**fields, execution_mode="kubernetes")
    assert set(found) == {"trace"}
    assert "a kubernetes benchmark pod cannot read a file on the worker" in found["trace"]


@pytest.mark.s3
def test_kubernetes_mode_reads_the_lake_s_bucket_only(tmp_path: Path, aws_on_moto, monkeypatch) -> None:
    """The benchmark pod's role reads the lake's bucket: a trace in another bucket is refused in planning (the
    worker could read it; the pod could not); one stored in the lake, by name or URI, plans."""
    s3 = boto3.client("s3", region_name="us-east-1")
    lake_bucket, other = (f"{kind}-{uuid.uuid4().hex[:12]}" for kind in ("lake", "other"))
    for bucket in (lake_bucket, other):
        s3.create_bucket(Bucket=bucket)
    text = shipped().read_text().encode()
    s3.put_object(Bucket=other, Key="t/day.jsonl", Body=text)
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", f"s3://{lake_bucket}/lake")
    fields = {"instance_types": TYPES, "workloads": ["trace"], "execution_mode": "kubernetes"}
    found = problems(**fields, trace=f"s3://{other}/t/day.jsonl")
    assert set(found) == {"trace"}, found
    assert "the benchmark pod's role reads the lake's bucket" in found["trace"]
    s3.put_object(Bucket=lake_bucket, Key="lake/traces/day.jsonl", Body=text)
    for named in ("day", f"s3://{lake_bucket}/lake/traces/day.jsonl"):
        workload = plan(**fields, trace=named).specs[0].load.workload
        assert workload is not None and workload.trace is not None
        assert (
            workload.trace.uri == f"s3://{lake_bucket}/lake/traces/day.jsonl"
            and workload.trace.requests == 31
        )


def test_a_trace_too_long_for_the_model_s_context_is_refused_naming_the_trace(tmp_path: Path) -> None:
    # local/tiny-llama's context is 2,048 tokens: one request of 2,000 + 100 cannot be replayed
    path = str(_trace(tmp_path, [(128, 16), (2000, 100), (64, 8)]))
    found = problems(instance_types=TYPES, workloads=["trace"], trace=path)
    assert set(found) == {"trace"}
    assert "the trace's longest prompt (2000 tokens) + output (100)" in found["trace"]
    assert "exceeds local/tiny-llama's context of 2048" in found["trace"]


def test_a_bad_trace_line_is_refused_in_planning_with_its_number(tmp_path: Path) -> None:
    path = _trace(tmp_path, [(64, 8)] * 3)
    lines = path.read_text().splitlines()
    bad = json.loads(lines[1]) | {"output_length": -3}
    path.write_text("\n".join([lines[0], json.dumps(bad), lines[2]]) + "\n")
    found = problems(instance_types=TYPES, workloads=["trace"], trace=str(path))
    assert set(found) == {"trace"} and "line 2: output_length" in found["trace"]


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"workloads": ["trace"], "trace": None}, "trace", "the trace workload needs a timed trace"),
        ({"workloads": ["fixed"], "trace": "x"}, "trace", "add 'trace' to workloads"),
        (
            {"workloads": ["fixed", "trace"], "load_mode": "search", "search_variable": "time_scale"},
            "search_variable",
            "search time_scale with workloads=['trace'] alone",
        ),
        (
            {"workloads": ["trace"], "load_mode": "search", "search_variable": "concurrency"},
            "search_variable",
            "a trace's load is its time-scale",
        ),
        (
            {"workloads": ["fixed", "trace"], "load_mode": "search", "search_variable": "concurrency"},
            "search_variable",
            "a trace's load is its time-scale",
        ),
    ],
)
def test_a_trace_field_out_of_place_is_refused(fields: dict, field: str, words: str) -> None:
    fields = {"trace": str(shipped())} | fields | {"slos": {"ttft_p99_ms": 500}}
    found = problems(instance_types=TYPES, **fields)
    assert field in found and words in found[field], found


def test_a_headroom_search_needs_a_trace_long_enough_for_its_p99(tmp_path: Path) -> None:
    search = {"load_mode": "search", "search_variable": "time_scale", "search_lower": 0.5, "search_upper": 8}
    search |= {"slos": {"ttft_p99_ms": 500}, "search_min_requests": 100}
    found = problems(instance_types=TYPES, workloads=["trace"], trace=str(shipped()), **search)
    assert set(found) == {"trace"}
    assert "31 requests: each probe replays the whole trace" in found["trace"]
    path = str(_trace(tmp_path, [(64, 8)] * 120, gap_s=0.1))
    spec = plan(instance_types=TYPES, workloads=["trace"], trace=path, **search).specs[0]
    assert spec.load.search is not None and spec.load.search.variable == "time_scale"
    assert spec.load.search.level_kind == "scale" and spec.load.prompts_per_level == 120


def test_the_cost_estimate_counts_a_trace_s_replays_at_their_own_pace(tmp_path: Path) -> None:
    """A trace takes its own time at each scale, whatever the stated request rate: the plan's estimate (and
    `max_campaign_usd`) count at least its replays: each level's repeats, and the first level's recheck."""
    from datetime import UTC, datetime

    from accelbench.campaign.estimate import Stated, estimate
    from accelbench.core.price import Price

    # 20 requests over 950 s: an hour's quiet traffic, far longer than 20 requests at any stated rate
    path = _trace(tmp_path, [(64, 8)] * 20, gap_s=50.0)
    (spec,) = plan(instance_types=TYPES, workloads=["trace"], trace=str(path), time_scales=[1, 4]).specs
    price = Price("r8g.4xlarge", "us-east-1", "on_demand", 0.8, datetime(2026, 1, 1, tzinfo=UTC), "test")
    (found,) = estimate([spec], None, [price], "us-east-1", "kubernetes", Stated(100.0, 10.0))
    repeats = spec.load.repeats
    replays = (950 / 1 + 950 / 4) * repeats + 950 / 1  # each level's repeats, then the first level again
    assert found.replay_s == pytest.approx(replays)
    assert found.seconds == pytest.approx(100.0 + replays)  # not 100 + requests / 10
    assert found.usd == pytest.approx((100.0 + replays) * 0.8 / 3600)
    assert "the trace's replays" in found.text()
    (fixed,) = estimate(
        plan(instance_types=TYPES).specs, None, [price], "us-east-1", "kubernetes", Stated(100, 10)
    )
    assert fixed.replay_s == 0.0  # a synthetic workload: its requests over the rate, as before
