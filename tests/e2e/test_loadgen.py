"""The load-generator driver against a real vLLM CPU server, with the real `vllm bench serve`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accelbench.core.levels import Level
from accelbench.core.metrics import CLIENT_LIMITED_RATIO
from accelbench.loadgen import server_metrics
from accelbench.loadgen.bench_command import bench_args
from accelbench.loadgen.driver import Driver, LevelFailed, in_flight_kept, read_result
from accelbench.local.server import LocalServer

from tests.support.specs import OUTPUT_LEN, PROMPTS, spec_for


def test_bench_args_always_carry_the_documented_flags() -> None:
    spec = spec_for("m")
    args = bench_args(
        spec,
        "http://127.0.0.1:1",
        num_prompts=5,
        seed=3,
        result_dir=Path("/r"),
        result_file="x.json",
        level=Level("rate", 2.5),
        metadata={"k": "v"},
    )
    joined = " ".join(args)
    for flag in (
        "--temperature 0",
        "--ignore-eos",
        "--random-range-ratio 0.0",
        "--seed 3",
        "--percentile-metrics ttft,tpot,itl,e2el",
        "--metric-percentiles 50,90,95,99",
        "--save-result",
        "--save-detailed",
        "--request-rate 2.5",
        "--burstiness 1.0",
        "--max-concurrency 1024",  # the in-flight cap of a Poisson level
        "--model tiny",
        "--metadata k=v",
    ):
        assert flag in joined, flag
    conc = bench_args(
        spec,
        "u",
        num_prompts=5,
        seed=3,
        result_dir=Path("/r"),
        result_file="x.json",
        level=Level("concurrency", 4),
        metadata={},
    )
    assert conc[conc.index("--max-concurrency") + 1] == "4"
    assert "--goodput" not in conc
    slo = spec_for("m", goodput_slos_ms={"ttft": 500.0, "tpot": 50.0})
    with_slo = bench_args(
        slo, "u", num_prompts=5, seed=3, result_dir=Path("/r"), result_file="x.json", level=None, metadata={}
    )
    assert with_slo[with_slo.index("--goodput") + 1 : with_slo.index("--goodput") + 3] == [
        "tpot:50",
        "ttft:500",
    ]


def test_malformed_bench_output_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c1-r0.json"
    path.write_text("{not json")
    with pytest.raises(LevelFailed, match=r"c1-r0\.json is not JSON"):
        read_result(path, spec_for("m"), 3)
    path.write_text(json.dumps({"completed": 3}))
    with pytest.raises(LevelFailed, match="lacks failed, duration"):
        read_result(path, spec_for("m"), 3)
    with pytest.raises(LevelFailed, match="wrote no result file"):
        read_result(tmp_path / "missing.json", spec_for("m"), 3)


def test_peak_concurrency_counts_overlapping_requests() -> None:
    from accelbench.core.metrics import peak_concurrency

    assert peak_concurrency([0.0, 1.0, 2.0], [1.0, 1.0, 1.0]) == 1  # back to back: never two at once
    assert peak_concurrency([0.0, 0.5, 0.6, 3.0], [1.0, 1.0, 1.0, 1.0]) == 3


def test_metrics_parser_sums_labelled_series() -> None:
    text = """# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tiny"} 40.0
vllm:generation_tokens_total{engine="1",model_name="tiny"} 2.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.25
"""
    parsed = server_metrics.parse(text)
    assert parsed["generation_tokens"] == 42.0 and parsed["kv_cache_usage"] == 0.25
    assert parsed["prompt_tokens"] == 0.0


@pytest.mark.vllm
def test_driver_runs_every_level_and_repeat_with_server_evidence(driven: tuple[Driver, dict]) -> None:
    driver, envelope = driven
    spec = driver.spec
    assert envelope["failure"] is None
    records = envelope["levels"]
    # Every level x repeat, then the first level once more (the recheck, its repeat numbered on).
    done = [(r["level_value"], r["repeat"], r["recheck"]) for r in records]
    assert done == [(1, 0, False), (1, 1, False), (4, 0, False), (4, 1, False), (1, 2, True)]
    for rec in records:
        assert rec["status"] == "ok", rec
        assert rec["client_output_tokens"] == PROMPTS * OUTPUT_LEN  # ignore-eos: exactly as requested
        assert rec["tokens_agree"] is True, rec["server_counters"]
        assert rec["server_counters"]["request_success"] == PROMPTS
        assert 1 <= rec["peak_concurrency"] <= rec["level_value"]
        assert rec["memory_peaks"]["server_rss_bytes"] > 100 * 2**20 and rec["memory_samples"] > 0
        result = json.loads((driver.spec_dir / rec["result_file"]).read_text())
        # Whether a busy 2-core host let the client keep the level in flight varies by run; that the
        # verdict is the one its own send and end stamps give does not.
        kept = in_flight_kept(result["start_times"], result["latencies"], rec["level_value"])
        assert kept is not None and rec["client_limited"] is (kept < CLIENT_LIMITED_RATIO), kept
        assert result["completed"] == PROMPTS and result["failed"] == 0
        assert all(t <= e for t, e in zip(result["ttfts"], result["latencies"], strict=True))
        assert result["accelbench_run_id"] == rec["run_id"]
    seeds = {r["repeat"]: r["seed"] for r in records}
    assert seeds == {0: 7, 1: 8, 2: 9}
    assert envelope["server"]["version"]["version"].startswith("0.32")
    assert json.loads((driver.spec_dir / "envelope.json").read_text())["spec_id"] == spec.spec_id


@pytest.mark.vllm
def test_a_server_killed_mid_run_fails_that_level_and_keeps_the_earlier_ones(
    tiny_model: Path, vllm_python: Path, bench_client, tmp_path: Path
) -> None:
    import os
    import signal
    import threading
    import time

    spec = spec_for(tiny_model)
    server = LocalServer(spec.server, tmp_path / "server", python=vllm_python).start()
    driver = Driver(
        spec,
        server.url,
        tmp_path / "raw",
        vllm=str(vllm_python.parent / "vllm"),
        server_pid=server.server_pid,
        server_exit=server.exit_status,
        client=bench_client,  # the session's warm client: what is under test is the server's death
    )

    def kill_after_first_level() -> None:
        deadline = time.monotonic() + 600
        while len(driver.records) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(server.process.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_after_first_level, daemon=True)
    killer.start()
    try:
        envelope = driver.run()
    finally:
        killer.join(timeout=5)
        server.stop()
    statuses = [(r["level_value"], r["repeat"], r["status"]) for r in envelope["levels"]]
    assert statuses == [(1, 0, "ok"), (1, 1, "ok"), (4, 0, "failed")]
    assert envelope["failure"].startswith("test-campaign/") and "c4-r0" in envelope["failure"]
    assert (driver.spec_dir / "c1-r0.json").is_file() and (driver.spec_dir / "c1-r1.json").is_file()
    saved = json.loads((driver.spec_dir / "envelope.json").read_text())
    assert saved["levels"][2]["error"] and saved["levels"][2]["server_exit_code"] == 137
    assert "exit code 137" in saved["levels"][2]["error"] and saved["levels"][2]["server_log_tail"]


def test_arrival_rate_excludes_the_drain_tail() -> None:
    from accelbench.core.metrics import arrival_rate

    # 5 requests sent 0.5 s apart, the last finishing 10 s later: 2 req/s sent, not 5 / 12
    result = {"start_times": [100.0, 100.5, 101.0, 101.5, 102.0], "completed": 5, "duration": 12.0}
    assert arrival_rate(result) == pytest.approx(2.0)
    assert arrival_rate({"completed": 4, "duration": 2.0}) == 2.0
