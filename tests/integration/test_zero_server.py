"""The benchmarks' zero-work streaming server keeps its promises: exact delays, the token count asked for,
vLLM's SSE shape with usage, and the counters the driver scrapes. The ground truth of issue 8's figures."""

from __future__ import annotations

import json
import sys
import time

import httpx
from accelbench.loadgen import server_metrics

from tests.support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from zero_pipeline import zero_server


def test_zero_server_streams_exactly_what_it_promises() -> None:
    ttft_ms, itl_ms, tokens = 40.0, 10.0, 6
    with zero_server(ttft_ms, itl_ms) as (url, _pid):
        before = server_metrics.scrape(url)
        body = {"model": "tiny", "prompt": "a b c d", "max_tokens": tokens, "stream": True}
        chunks, stamps = [], []
        sent = time.perf_counter()
        with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=10) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    stamps.append(time.perf_counter() - sent)
                    chunks.append(line[len("data: ") :])
        after = server_metrics.scrape(url)
        (arrived, first, last), *rest = httpx.get(f"{url}/stats", timeout=10).json()["applied"]
        assert rest == [] and httpx.get(f"{url}/stats", timeout=10).json()["applied"] == []  # reset
    assert chunks[-1] == "[DONE]"
    events = [json.loads(c) for c in chunks[:-1]]
    texts = [e["choices"][0]["text"] for e in events if e["choices"][0]["text"]]
    assert len(texts) == tokens
    assert events[-1]["choices"][0]["finish_reason"] == "length"
    usage = {"prompt_tokens": 4, "completion_tokens": tokens, "total_tokens": 4 + tokens}
    assert events[-1]["usage"] == usage
    # The injected delays are lower bounds the client sees (how close it gets is benchmarks/, not a test).
    assert stamps[0] * 1000 >= ttft_ms
    assert stamps[tokens - 1] * 1000 >= ttft_ms + (tokens - 1) * itl_ms
    assert stamps == sorted(stamps)
    # The server's own times are on the client's clock (CLOCK_MONOTONIC): the hops add up.
    assert sent < arrived < first < last < sent + stamps[tokens - 1]
    assert (first - arrived) * 1000 >= ttft_ms and (last - arrived) * 1000 >= ttft_ms + (tokens - 1) * itl_ms
    delta = server_metrics.counter_delta(before, after)
    assert (delta["generation_tokens"], delta["request_success"], delta["prompt_tokens"]) == (tokens, 1, 4)


def test_a_degrading_zero_server_slows_down_past_its_load() -> None:
    """degrade_after=1: a request that finds k requests streaming (itself included) waits 1 + (k - 1)
    times the TTFT, by the server's own clock."""
    import threading

    ttft_ms = 300.0  # alone, a wait under 2x: any stall below 300 ms (at 100 ms one CI run saw 242 ms)
    body = {"model": "tiny", "prompt": "a", "max_tokens": 2, "stream": True}
    with zero_server(ttft_ms, 1.0, degrade_after=1) as (url, _pid):

        def one() -> None:
            with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=10) as response:
                for _ in response.iter_lines():
                    pass

        threads = [threading.Thread(target=one) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        applied = httpx.get(f"{url}/stats", timeout=10).json()["applied"]
    assert len(applied) == 3
    # How many were streaming when each arrived (itself included), by the server's own stamps: the threads
    # start together, but on a loaded machine one may arrive after another has finished.
    streaming = [sum(a <= arrived < last for a, _f, last in applied) for arrived, _first, _l in applied]
    # Those surely streaming when the server set the delay (between arrival and first token): streaming at
    # both ends. One that ended in between may or may not have counted (a CI run under load: it had not).
    surely = [sum(a <= arrived and end >= first for a, _f, end in applied) for arrived, first, _l in applied]
    waits = [(first - arrived) * 1000 for arrived, first, _last in applied]
    assert max(streaming) >= 2, applied  # some requests overlapped
    for k, sure, wait in zip(streaming, surely, waits, strict=True):
        assert wait >= sure * ttft_ms, (sure, wait, applied)  # k streaming: k times the TTFT
        if k == 1:
            assert wait < 2 * ttft_ms, wait  # alone: no slowdown
