"""A zero-work OpenAI-compatible streaming server: the ground truth for the load generator's benchmarks.

It does no inference. POST /v1/completions (stream) waits exactly `--ttft-ms` before the first token,
then `--itl-ms` between tokens, and streams `max_tokens` one-character tokens as Server-Sent Events in
the shape vLLM's OpenAI server uses (a final chunk with `usage`, then `[DONE]`). So the client's measured
TTFT should be ttft_ms and its E2EL ttft_ms + (max_tokens - 1) * itl_ms, and with zero delays the
client is the only thing that limits the request rate. /health, /v1/models and /metrics (the vLLM
counters the driver scrapes) answer too; /stats returns (and resets), per finished request, the
`time.perf_counter()` of its handler's start and of the start of its first and last token writes,
and its `x-request-id`.
That clock is CLOCK_MONOTONIC, shared by every process on the host, so a client's own stamps can be
set against them.

Run: .venv/bin/python benchmarks/zero_server.py --port 8000 [--ttft-ms 50 --itl-ms 5] [--cpu 1]
It binds 127.0.0.1 only and prints `ready <port>` when it listens. `--fail-every N` (off by default)
answers HTTP 500 to every Nth completion request, for tests of levels with some failed requests.
`--degrade-after N` (off by default) makes a server that degrades past a known load: while more than N
requests stream at once, each delay (the TTFT, then each ITL) is multiplied by 1 + slope x (in flight -
N) at the time it starts (`--degrade-slope`, 1 by default), for the load search's tests.
`--degrade-above-rate R` (off by default) degrades past a known request rate instead: while the level's
arrival rate (ZeroServer.arrival_rate: from the server's own arrival stamps of the level's requests, once
RATE_MIN of them have arrived) is above R req/s, each delay is multiplied by 1 + slope. An
in-flight count under Poisson arrivals has no sharp threshold in rate (Little's law: it is rate x latency,
and its tail reaches any count now and then); the arrival rate of regular arrivals has one.
`--slow-after-requests N --slow-factor X` (off by default) makes a host that drifts: from the (N+1)th
completion request on, every delay (TTFT and ITL) is X times what it was, for the load search's drift test.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import statistics
import time

from aiohttp import web

# --degrade-above-rate (ZeroServer.arrival_rate): the arrivals before a level's rate is judged; how close
# two arrivals are when the second was held back with the first (a schedule's gaps are far longer below
# 400 req/s); the gap that starts a new level for a client that names no requests (times the median gap).
RATE_MIN, RATE_BURST_S, RATE_PAUSE = 40, 0.002, 3.0
SPIN_S = 0.002  # the event loop's timers wake up to ~1 ms late: the last stretch yields in a loop


async def until(due: float) -> None:
    """Wake at `due` (perf_counter) within microseconds: a timer for most of the wait, then yields."""
    if due - time.perf_counter() > SPIN_S:
        await asyncio.sleep(due - time.perf_counter() - SPIN_S)
    while time.perf_counter() < due:
        await asyncio.sleep(0)


def _schedule_rate(points: list[tuple[int, float]]) -> float | None:
    """The rate of the schedule that (index, arrival time) `points` follow, however late some arrived
    (ZeroServer.arrival_rate): the median of (t_j - t_i) / (j - i) over consecutive requests i < j, leaving
    out each request that arrived within RATE_BURST_S of the one before it (held back with it)."""
    kept: list[tuple[int, float]] = []
    previous: float | None = None
    for index, at in points:
        if previous is None or abs(at - previous) > RATE_BURST_S:
            kept.append((index, at))
        previous = at
    gaps = [(tj - ti) / (j - i) for (i, ti), (j, tj) in itertools.pairwise(kept)]
    gap = statistics.median(gaps) if gaps else 0.0
    return 1.0 / gap if gap > 0 else None


class ZeroServer:
    def __init__(
        self,
        ttft_s: float,
        itl_s: float,
        model: str,
        fail_every: int = 0,
        degrade_after: int | None = None,
        degrade_slope: float = 1.0,
        degrade_above_rate: float | None = None,
        slow_after_requests: int | None = None,
        slow_factor: float = 1.0,
    ) -> None:
        self.ttft_s, self.itl_s, self.model = ttft_s, itl_s, model
        self.slow_after_requests, self.slow_factor = slow_after_requests, slow_factor  # None: never drifts
        self.fail_every, self.received = fail_every, 0  # fail_every 0: every request succeeds
        self.degrade_after, self.degrade_slope = degrade_after, degrade_slope  # None: never degrades
        self.degrade_above_rate = degrade_above_rate  # None: the arrival rate never degrades it
        # The current level's arrivals: request index -> perf_counter at its handler's start.
        self.level: str | None = None
        self.arrivals: dict[int, float] = {}
        self._rate_of: int = 0  # arrival_rate() is worked out once per arrival: for this many
        self._rate: float | None = None
        self.running = 0
        self.streaming = 0  # requests between their first and last token: the load that degrades
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = 0
        # (handler start, first token written, last token written) per finished request, perf_counter: what
        # the server actually did (asyncio wakes a little late), so a benchmark can split an error by hop.
        self.applied: list[tuple[float, float, float]] = []
        self.request_ids: list[str | None] = []  # the client's x-request-id of each, in the same order

    async def health(self, _: web.Request) -> web.Response:
        return web.Response(text="")

    async def models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def metrics(self, _: web.Request) -> web.Response:
        lines = [
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{model_name="{self.model}"}} {self.running}',
            "# TYPE vllm:num_requests_waiting gauge",
            f'vllm:num_requests_waiting{{model_name="{self.model}"}} 0',
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f'vllm:kv_cache_usage_perc{{model_name="{self.model}"}} 0',
        ]
        for name, value in (
            ("prompt_tokens", self.prompt_tokens),
            ("generation_tokens", self.generation_tokens),
            ("num_preemptions", 0),
            ("request_success", self.success),
        ):
            lines += [
                f"# TYPE vllm:{name} counter",
                f'vllm:{name}_total{{model_name="{self.model}"}} {value}',
            ]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    @property
    def degrades(self) -> bool:
        return self.degrade_after is not None or self.degrade_above_rate is not None

    def arrival_rate(self) -> float | None:
        """Requests per second of the current level, from the server's own arrival stamps of its requests
        (request index -> time), once RATE_MIN of them have arrived; None before.

        `vllm bench serve` sends on an absolute schedule, so a request arrives on time or late, never
        early: when the client or this server stalls on a loaded machine, the requests it held back arrive
        together when it runs again. A median of consecutive gaps took that burst for a faster rate (one
        long gap and several near zero). Here a held-back burst counts once, by its first request: the gap
        into it is long by the stall, the one from it to the next on-time request short by as much, spread
        over the requests held back (two gaps off, whatever the stall's length). So the median is the
        schedule's gap unless stalls surround most of the level's gaps: the rate the client was asked
        for, however loaded the machine."""
        if len(self.arrivals) < RATE_MIN:
            return None
        if self._rate_of != len(self.arrivals):
            self._rate_of, self._rate = len(self.arrivals), _schedule_rate(sorted(self.arrivals.items()))
        return self._rate

    def arrive(self, at: float, request_id: str | None) -> None:
        """Count an arrival in its level. `vllm bench serve` names its requests <prefix><index>, with a
        fresh prefix for each run (each level). A request without such an id (a client that sends none,
        or the bench's own untimed test request) counts in arrival order, and a pause (a gap RATE_PAUSE
        times the median gap so far) starts its next level."""
        named = re.fullmatch(r"(.*?)(\d+)", request_id or "")
        level, index = (named[1], int(named[2])) if named else (None, None)
        if level is None and self.level is None and len(self.arrivals) >= 2:
            times = list(self.arrivals.values())  # in arrival order: the indices are arrival counts
            gaps = [b - a for a, b in itertools.pairwise(times)]
            if at - times[-1] > RATE_PAUSE * statistics.median(gaps):
                self.arrivals, self._rate_of = {}, 0
        if level != self.level:
            self.level, self.arrivals, self._rate_of = level, {}, 0
        self.arrivals[len(self.arrivals) if index is None else index] = at

    def slowdown(self) -> float:
        """The factor on the next delay: 1, or 1 + slope x the requests streaming beyond degrade_after,
        or 1 + slope while the arrival rate is above degrade_above_rate."""
        if self.degrade_above_rate is not None:
            rate = self.arrival_rate()
            return 1.0 + self.degrade_slope if rate is not None and rate > self.degrade_above_rate else 1.0
        if self.degrade_after is None or self.streaming <= self.degrade_after:
            return 1.0
        return 1.0 + self.degrade_slope * (self.streaming - self.degrade_after)

    async def completions(self, request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        body = await request.json()
        n = int(body.get("max_tokens") or 16)
        prompt = body.get("prompt") or ""
        n_in = len(prompt) if isinstance(prompt, list) else max(1, len(str(prompt).split()))
        self.received += 1
        if self.slow_after_requests is not None and self.received == self.slow_after_requests + 1:
            self.ttft_s, self.itl_s = self.ttft_s * self.slow_factor, self.itl_s * self.slow_factor
        self.arrive(arrived, request.headers.get("x-request-id"))
        if self.fail_every and self.received % self.fail_every == 0:
            return web.json_response({"error": {"message": "injected failure", "code": 500}}, status=500)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        self.running += 1
        created, rid = int(time.time()), f"cmpl-{id(request):x}"
        first = last = 0.0
        due, streaming = arrived, True
        self.streaming += 1
        try:
            for i in range(n):
                if not self.degrades:
                    # Sleep until the exact planned send time of token i (no drift across tokens).
                    due = arrived + self.ttft_s + i * self.itl_s
                else:  # each delay as slow as the load is when it starts
                    due += (self.ttft_s if i == 0 else self.itl_s) * self.slowdown()
                await until(due)
                chunk = {
                    "id": rid,
                    "object": "text_completion",
                    "created": created,
                    "model": self.model,
                    "choices": [{"index": 0, "text": "x", "logprobs": None, "finish_reason": None}],
                }
                data = b"data: " + json.dumps(chunk).encode() + b"\n\n"
                last = time.perf_counter()  # when the write starts: the client cannot see it earlier
                if i == 0:
                    first = last
                await response.write(data)
            # Done streaming before the final chunk: the client's next request (sent once this one ends)
            # never finds this one still counted.
            self.streaming, streaming = self.streaming - 1, False
            usage = {"prompt_tokens": n_in, "completion_tokens": n, "total_tokens": n_in + n}
            final = {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": self.model,
                "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "length"}],
                "usage": usage,
            }
            await response.write(b"data: " + json.dumps(final).encode() + b"\n\ndata: [DONE]\n\n")
            await response.write_eof()
        finally:
            self.running -= 1
            if streaming:  # the client went away mid-stream
                self.streaming -= 1
        self.prompt_tokens += n_in
        self.generation_tokens += n
        self.success += 1
        self.applied.append((arrived, first, last))
        self.request_ids.append(request.headers.get("x-request-id"))
        return response

    async def stats(self, _: web.Request) -> web.Response:
        """(start, first write, last write) of each request so far, then forgotten: one level per call."""
        applied, ids, self.applied, self.request_ids = self.applied, self.request_ids, [], []
        return web.json_response({"applied": applied, "request_ids": ids})


def app(server: ZeroServer) -> web.Application:
    application = web.Application(client_max_size=64 * 1024 * 1024)
    application.router.add_get("/health", server.health)
    application.router.add_get("/v1/models", server.models)
    application.router.add_get("/metrics", server.metrics)
    application.router.add_get("/stats", server.stats)
    application.router.add_post("/v1/completions", server.completions)
    return application


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft-ms", type=float, default=0.0)
    parser.add_argument("--itl-ms", type=float, default=0.0)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--cpu", type=int, help="pin the server to this CPU")
    parser.add_argument("--fail-every", type=int, default=0, help="answer 500 to every Nth request (0: none)")
    parser.add_argument("--degrade-after", type=int, help="slow down while more requests than this stream")
    parser.add_argument("--degrade-slope", type=float, default=1.0, help="the slowdown per request beyond")
    parser.add_argument("--degrade-above-rate", type=float, help="slow down while arrivals exceed this req/s")
    parser.add_argument("--slow-after-requests", type=int, help="from the request after this many, drift")
    parser.add_argument("--slow-factor", type=float, default=1.0, help="every delay x this once drifted")
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    server = ZeroServer(
        args.ttft_ms / 1000,
        args.itl_ms / 1000,
        args.model,
        args.fail_every,
        args.degrade_after,
        args.degrade_slope,
        args.degrade_above_rate,
        slow_after_requests=args.slow_after_requests,
        slow_factor=args.slow_factor,
    )

    async def serve() -> None:
        runner = web.AppRunner(app(server), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.port, backlog=4096).start()
        print(f"ready {args.port}", flush=True)
        await asyncio.Event().wait()

    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve())


if __name__ == "__main__":
    main()
