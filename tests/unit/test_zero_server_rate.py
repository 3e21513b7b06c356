"""The zero-work server's arrival rate (benchmarks/zero_server.py, `--degrade-above-rate`): the rate of the
client's schedule, however long the client or the server stalled (tests/e2e/test_load_search.py's request-rate
search depends on it: a probe 5% below the known rate must never degrade, one 4% above always)."""

from __future__ import annotations

import random
import sys

import pytest

from tests.support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from zero_server import RATE_MIN, ZeroServer


def _schedule(rate: float, n: int, seed: int) -> list[float]:
    """Send times as `vllm bench serve --burstiness 1000` draws them: gamma gaps, scaled to n / rate."""
    rng = random.Random(seed)
    times, t = [], 0.0
    for _ in range(n):
        t += rng.gammavariate(1000.0, 1 / (rate * 1000.0))
        times.append(t)
    return [x * (n / rate) / times[-1] for x in times]


def _rates(rate: float, stalls: list[tuple[float, float]], seed: int = 3) -> list[float | None]:
    """arrival_rate() after each of 100 requests of one level, sent on schedule except while a stall holds
    them back (they arrive together when it ends, 0.3 ms apart, as a server catching up stamps them)."""
    server = ZeroServer(0.1, 0.005, "tiny", degrade_above_rate=20.0)
    server.arrive(0.0, None)  # the bench's untimed test request: no id, not part of the level
    rates, rng = [], random.Random(seed)
    for i, due in enumerate(_schedule(rate, 100, seed)):
        at = due + rng.uniform(0, 0.004)  # the event loop's jitter
        for start, end in stalls:
            if start <= due < end:
                at = end + 0.0003 * i
        server.arrive(1.0 + at, f"bench-1a2b3c4d-{i}")
        rates.append(server.arrival_rate())
    return rates


@pytest.mark.parametrize(
    "stalls",
    [
        [],
        [(0.8, 2.1)],  # 1.3 s at the level's start (seen in a parallel run: a median of gaps said 24 req/s)
        [(8.2, 16.5)],  # 8.3 s late in a level
        [(t, t + 0.2) for t in (0.5, 1.4, 2.2, 3.1, 3.9, 4.6)],  # 0.2 s every 0.8 s
    ],
    ids=["none", "1.3s-at-start", "8.3s-late", "0.2s-often"],
)
@pytest.mark.parametrize("rate", [19.03, 20.75])  # the search's probes nearest the known rate (20 req/s)
def test_the_rate_is_the_schedules_however_long_a_stall(
    rate: float, stalls: list[tuple[float, float]]
) -> None:
    rates = _rates(rate, stalls)
    assert rates[: RATE_MIN - 1] == [None] * (RATE_MIN - 1)
    judged = [r for r in rates[RATE_MIN - 1 :] if r is not None]
    assert len(judged) == 100 - RATE_MIN + 1
    assert all(abs(r / rate - 1) < 0.02 for r in judged), (min(judged), max(judged))


def test_each_level_is_judged_on_its_own_requests() -> None:
    server = ZeroServer(0.1, 0.005, "tiny", degrade_above_rate=20.0)
    for i in range(50):
        server.arrive(i / 25, f"bench-00000001-{i}")
    assert server.arrival_rate() == pytest.approx(25) and server.slowdown() == 2.0
    for i in range(RATE_MIN):  # the next level (a fresh prefix) starts from nothing
        server.arrive(10 + i / 15, f"bench-00000002-{i}")
        assert (server.arrival_rate() is None) == (i < RATE_MIN - 1)
    assert server.arrival_rate() == pytest.approx(15) and server.slowdown() == 1.0
