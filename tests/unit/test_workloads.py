"""Workload profiles as `vllm bench serve` options (issue 19): each profile's dataset, lengths and
endpoint, and a plan without a workload running exactly the command it ran before workloads existed."""

from __future__ import annotations

from pathlib import Path

import pytest
from accelbench.core.levels import Level
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.core.workloads import PROFILES, Workload, profile
from accelbench.loadgen.bench_command import bench_args
from pydantic import ValidationError

from tests.support.specs import tiny_spec


def _args(load: LoadPlan, level: Level) -> dict[str, str | None]:
    spec = BenchmarkSpec(server=tiny_spec("m"), load=load, campaign_id="c")
    args = bench_args(
        spec,
        "http://127.0.0.1:1",
        num_prompts=10,
        seed=1,
        result_dir=Path("/tmp"),
        result_file="r.json",
        level=level,
        metadata={},
    )
    out: dict[str, str | None] = {}
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            following = args[i + 1] if i + 1 < len(args) else None
            out[arg] = None if following is None or following.startswith("--") else following
    return out


def test_no_workload_runs_random_prompts_of_the_plan_s_lengths_on_completions() -> None:
    load = LoadPlan(input_len=64, output_len=8, range_ratio=0.2, concurrency=(2,))
    args = _args(load, Level("concurrency", 2))
    assert (args["--backend"], args["--endpoint"], args["--dataset-name"]) == (
        "openai",
        "/v1/completions",
        "random",
    )
    assert (args["--random-input-len"], args["--random-output-len"], args["--random-range-ratio"]) == (
        "64",
        "8",
        "0.2",
    )
    assert args["--num-warmups"] == "0"  # no per-level warm-up unless asked: as before
    assert load.runs.name == "fixed" and "workload" not in load.model_dump()


def test_the_chat_profile_uses_the_chat_endpoint_and_length_ranges() -> None:
    chat = PROFILES["chat"]
    load = LoadPlan(input_len=chat.input_len, output_len=chat.output_len, workload=chat, concurrency=(1,))
    args = _args(load, Level("concurrency", 1))
    assert (args["--backend"], args["--endpoint"]) == ("openai-chat", "/v1/chat/completions")
    assert (args["--random-input-len"], args["--random-range-ratio"]) == ("256", "0.5")
    assert chat.max_input_len == 385 and chat.label() == "chat: random 256→128 ±50% (chat)"


def test_the_shared_prefix_profile_is_vllm_s_prefix_repetition() -> None:
    shared = PROFILES["shared-prefix"]
    args = _args(
        LoadPlan(input_len=1088, output_len=64, workload=shared, concurrency=(1,)), Level("concurrency", 1)
    )
    assert args["--dataset-name"] == "prefix_repetition" and "--random-input-len" not in args
    assert (args["--prefix-repetition-prefix-len"], args["--prefix-repetition-suffix-len"]) == ("1024", "64")
    assert (args["--prefix-repetition-num-prefixes"], args["--prefix-repetition-output-len"]) == ("4", "64")


def test_a_custom_workload_reads_the_user_s_jsonl_in_order() -> None:
    custom = profile("custom", 100, 16, "/data/prompts.jsonl")
    args = _args(
        LoadPlan(input_len=100, output_len=16, workload=custom, concurrency=(1,)), Level("concurrency", 1)
    )
    assert (args["--dataset-name"], args["--dataset-path"], args["--custom-output-len"]) == (
        "custom",
        "/data/prompts.jsonl",
        "16",
    )
    assert "--disable-shuffle" in args and "--skip-chat-template" in args


def test_a_trace_level_replays_the_trace_at_its_time_scale_from_the_load_generator_s_copy() -> None:
    """vLLM's timed_trace dataset (its own option names and defaults: FACTS.md section 4): the file the load
    generator fetched beside its results, each request's time x 1/scale, open loop up to the in-flight cap."""
    from accelbench.core.workloads import traced
    from accelbench.sizing.fit import LOADGEN_MAX_IN_FLIGHT
    from accelbench.traces.timed_trace import identify, shipped

    trace = traced(identify(shipped().read_text(), "generated-day", "s3://lake/traces/generated-day.jsonl"))
    load = LoadPlan(
        input_len=trace.input_len, output_len=trace.output_len, workload=trace, time_scales=(1, 4)
    )
    args = _args(load, Level("scale", 4))
    assert (args["--backend"], args["--endpoint"], args["--dataset-name"]) == (
        "openai",
        "/v1/completions",
        "timed_trace",
    )
    assert args["--dataset-path"] == "/tmp/trace.jsonl"  # the copy, not the URI
    assert (args["--timed-trace-sec-multiplier"], args["--timed-trace-chunk-hash-size"]) == ("0.25", "16")
    assert args["--max-concurrency"] == str(LOADGEN_MAX_IN_FLIGHT) and "--request-rate" not in args
    assert Level("scale", 4).key == "x4" and Level("scale", 0.5).words == "0.5x the trace"
    assert trace.label().startswith("trace: generated-day (sha256 961f730c6436): 31 requests over 27 s")
    # a plan without time-scales dumps as before the field existed (its spec's id unchanged)
    assert "time_scales" not in LoadPlan(input_len=8, output_len=4, concurrency=(1,)).model_dump()


@pytest.mark.parametrize(("concurrency", "warmups"), [(2, 4), (16, 16), (None, 4)])
def test_each_level_warms_up_with_at_least_its_concurrency(concurrency: int | None, warmups: int) -> None:
    load = LoadPlan(input_len=8, output_len=4, level_warmups=4, concurrency=(2, 16), request_rates=(8.0,))
    assert load.level_warmup_count(concurrency) == warmups  # None: a rate level
    assert LoadPlan(input_len=8, output_len=4).level_warmup_count(16) == 0  # unset: none
    # Never inside a measured run: the Driver runs them apart, before the level's first scrape.
    assert _args(load, Level("concurrency", 16))["--num-warmups"] == "0"


def test_a_profile_outside_the_list_is_refused() -> None:
    with pytest.raises(ValidationError, match="name"):
        Workload(name="sharegpt", input_len=1, output_len=1)  # type: ignore[arg-type]
