"""The adaptive load search (accelbench.search) against synthetic servers whose capacity is known."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from accelbench.core.search_plan import ProbeResult, RepeatResult, SearchPlan
from accelbench.core.slos import SAMPLE_WARNING_REQUESTS, Slos
from accelbench.search.load_search import LoadSearch, run_search
from pydantic import ValidationError

SLOS = Slos(ttft_p99_ms=500, e2el_p99_ms=5000)
TRUSTED = 200  # completed requests per repeat: enough for the plans below (min_requests=100)


def _repeat(ok: bool, **overrides: object) -> RepeatResult:
    values: dict[str, object] = {
        "completed": TRUSTED,
        "p99_ttft_ms": 100.0 if ok else 900.0,
        "p99_e2el_ms": 1000.0,
        "duration_s": 10.0,
    }
    return RepeatResult(**(values | overrides))


def _server(capacity: float, repeats: int = 1) -> Callable[[float], ProbeResult]:
    """Meets the SLOs up to `capacity`, misses p99 TTFT past it; records the loads it was probed at."""

    def probe(load: float) -> ProbeResult:
        probe.loads.append(load)  # type: ignore[attr-defined]
        return ProbeResult(load=load, repeats=tuple(_repeat(load <= capacity) for _ in range(repeats)))

    probe.loads = []  # type: ignore[attr-defined]
    return probe


def _plan(**fields: object) -> SearchPlan:
    return SearchPlan(**({"slos": SLOS, "min_requests": 100} | fields))


@pytest.mark.parametrize("capacity", [1, 2, 7, 33, 100, 255])
def test_concurrency_capacity_is_found_to_one_step(capacity: int) -> None:
    plan = _plan(variable="concurrency", lower=1, upper=256)
    result = run_search(plan, _server(capacity))
    assert (result.outcome, result.capacity) == ("capacity", capacity)
    assert (result.passing, result.failing) == (capacity, capacity + 1)
    assert result.limiting == "p99 TTFT"
    assert result.summary().startswith(
        f"capacity {capacity} concurrent (bracket [{capacity}, {capacity + 1}]"
    )


@pytest.mark.parametrize("capacity", [0.73, 3.7, 12.0, 41.5])
def test_request_rate_capacity_is_found_within_the_relative_precision(capacity: float) -> None:
    plan = _plan(variable="request_rate", lower=0.5, upper=64, relative=0.1)
    result = run_search(plan, _server(capacity))
    assert result.outcome == "capacity" and result.capacity is not None and result.failing is not None
    # The answer never overstates the capacity, and understates it by at most the precision.
    assert result.capacity <= capacity < result.failing <= result.capacity * 1.1
    assert result.capacity >= capacity / 1.1


def test_a_step_precision_on_request_rate_and_a_relative_one_on_concurrency() -> None:
    result = run_search(_plan(variable="request_rate", lower=1, upper=50, step=0.5), _server(17.3))
    assert result.capacity is not None and result.failing is not None
    assert result.capacity <= 17.3 < result.failing <= result.capacity + 0.5
    result = run_search(_plan(variable="concurrency", lower=1, upper=512, relative=0.1), _server(300))
    assert result.capacity is not None and result.failing is not None
    assert result.capacity <= 300 < result.failing <= result.capacity * 1.1
    assert all(p.load == int(p.load) for p in result.probes)


def test_one_repeat_over_the_slo_fails_the_probe() -> None:
    search = LoadSearch(_plan(variable="concurrency", lower=8, upper=64, repeats=3))
    probe = search.record(ProbeResult(load=8, repeats=(_repeat(True), _repeat(False), _repeat(True))))
    assert probe.verdict == "fail" and probe.limiting == "p99 TTFT"
    assert probe.misses == ("repeat 2: p99 TTFT 900 ms > 500 ms",)
    assert search.done and search.result().outcome == "below_lower" and search.result().capacity is None


def test_noisy_repeats_pull_the_capacity_down_never_up() -> None:
    """Past 12 one repeat in three misses the SLO (the others would pass up to 40): 12 is the answer."""

    def probe(load: float) -> ProbeResult:
        return ProbeResult(load=load, repeats=(_repeat(load <= 40), _repeat(load <= 40), _repeat(load <= 12)))

    result = run_search(_plan(variable="concurrency", lower=1, upper=128, repeats=3), probe)
    assert (result.capacity, result.failing) == (12, 13)
    assert all(
        len(p.misses) == 1 and p.misses[0].startswith("repeat 3:") for p in result.probes if 12 < p.load <= 40
    )


def test_a_p99_from_too_few_requests_is_not_trusted() -> None:
    plan = _plan(variable="concurrency", lower=1, upper=64)
    assert SearchPlan(variable="concurrency", lower=1, upper=8, slos=SLOS).min_requests == (
        SAMPLE_WARNING_REQUESTS  # the report's sample-size rule, unless the plan lowers it
    )
    search = LoadSearch(plan)
    assert search.record(ProbeResult(load=1, repeats=(_repeat(True),))).verdict == "pass"
    # Within the SLO from 40 requests: not a pass...
    probe = search.record(ProbeResult(load=2, repeats=(_repeat(True, completed=40),)))
    # (100 less the 1% of failures the error-rate limit allows: SearchPlan.trusted_requests)
    assert probe.verdict == "untrusted" and probe.why == "repeat 1's p99 from 40 requests (< 99)"
    result = search.result()
    assert (result.outcome, result.capacity, result.stopped_at, result.passing) == ("untrusted", None, 2, 1)
    assert result.summary().startswith("untrusted at 2 concurrent: repeat 1's p99 from 40 requests")
    # ...nor is a p99 over it a failure; but an error rate over its limit is one, whatever the count.
    search = LoadSearch(plan)
    assert search.record(ProbeResult(load=1, repeats=(_repeat(False, completed=40),))).verdict == "untrusted"
    search = LoadSearch(plan)
    probe = search.record(ProbeResult(load=1, repeats=(_repeat(False, completed=40, failed=10),)))
    assert probe.verdict == "fail" and probe.limiting == "error rate"
    assert probe.misses == ("repeat 1: error rate 20.00% > 1.00%",)


def test_a_client_limited_probe_stops_the_search_instead_of_failing_the_server() -> None:
    """Past 30 req/s the client cannot keep up, and the latencies it measures miss the SLO: that is not
    the server's capacity, and the search says where it stopped instead."""

    def probe(load: float) -> ProbeResult:
        limited = load > 30
        return ProbeResult(load=load, repeats=(_repeat(not limited, client_limited=limited),) * 2)

    result = run_search(_plan(variable="request_rate", lower=1, upper=100, repeats=2), probe)
    assert (result.outcome, result.capacity, result.failing, result.stopped_at) == (
        "client_limited",
        None,
        None,
        32,
    )
    assert result.passing == 16 and result.probes[-1].verdict == "client_limited"
    assert result.summary() == (
        "client-limited at 32 req/s: the client could not send the requested load in repeat 1, 2 "
        "(6 probes, 120 server-s)"
    )


def test_the_bounds_are_respected() -> None:
    server = _server(1000)
    result = run_search(_plan(variable="concurrency", lower=3, upper=100), server)
    assert server.loads == [3, 6, 12, 24, 48, 96, 100]  # type: ignore[attr-defined]
    assert (result.outcome, result.capacity, result.failing) == ("upper_bound", 100, None)
    assert result.summary().startswith("capacity at least 100 concurrent")
    server = _server(0.1)
    result = run_search(_plan(variable="request_rate", lower=0.5, upper=8), server)
    assert server.loads == [0.5]  # type: ignore[attr-defined]
    assert (result.outcome, result.capacity, result.failing) == ("below_lower", None, 0.5)
    for capacity in (3.3, 7.9):
        server = _server(capacity)
        run_search(_plan(variable="request_rate", lower=0.5, upper=8), server)
        assert all(0.5 <= load <= 8 for load in server.loads)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fields", "capacities"),
    [
        ({"variable": "concurrency", "lower": 1, "upper": 256}, [1, 5, 37, 128, 200]),
        ({"variable": "request_rate", "lower": 0.25, "upper": 64, "relative": 0.1}, [0.3, 2.2, 9.0, 50.0]),
    ],
)
def test_the_search_needs_fewer_probes_than_a_grid_of_the_same_precision(
    fields: dict[str, object], capacities: list[float]
) -> None:
    plan = _plan(**fields)
    grid = plan.grid()
    assert grid[0] == plan.lower and grid[-1] == plan.upper
    assert all(plan.precise(a, b) for a, b in pairwise(grid))  # the same precision
    for capacity in capacities:
        result = run_search(plan, _server(capacity))
        # The grid's answer: its largest passing load; the search's lies at or above it.
        assert result.capacity is not None and result.capacity >= max(x for x in grid if x <= capacity)
        assert result.probes_used < len(grid) / 2, (capacity, result.probes_used, len(grid))


def test_the_limiting_metric_and_the_cost() -> None:
    """E2EL breaks first (past 20), TTFT only past 24: the failing end of the bracket names E2EL."""

    def probe(load: float) -> ProbeResult:
        ttft, e2el = (100.0 if load <= 24 else 5000.0), (1000.0 if load <= 20 else 6000.0)
        repeat = RepeatResult(completed=TRUSTED, p99_ttft_ms=ttft, p99_e2el_ms=e2el, duration_s=12.5)
        return ProbeResult(load=load, repeats=(repeat, repeat))

    result = run_search(_plan(variable="concurrency", lower=1, upper=64, repeats=2), probe)
    assert (result.capacity, result.limiting) == (20, "p99 E2E latency")
    assert result.probes[5].load == 32 and result.probes[5].limiting == "p99 TTFT"  # 10x over beats 1.2x
    assert result.server_s == result.probes_used * 25.0
    assert [p.step for p in result.probes] == list(range(result.probes_used))
    assert [p.phase for p in result.probes][:6] == ["bracket"] * 6 and result.probes[6].phase == "bisect"


def test_an_unmeasured_latency_fails_its_limit_as_in_the_report() -> None:
    search = LoadSearch(_plan(variable="concurrency", lower=1, upper=4))
    probe = search.record(ProbeResult(load=1, repeats=(_repeat(True, p99_e2el_ms=None),)))
    assert probe.verdict == "fail" and probe.misses == ("repeat 1: p99 E2E latency not measured > 5000 ms",)


def test_a_plan_names_what_is_wrong_with_it() -> None:
    with pytest.raises(ValidationError) as err:
        SearchPlan(variable="concurrency", lower=8, upper=4.5, slos=Slos(max_error_rate=None))
    message = str(err.value)
    for why in (
        "upper=4.5: below lower=8",
        "upper=4.5: a concurrency is a whole number",
        "slos=none: a search needs at least one SLO",
    ):
        assert why in message
    with pytest.raises(ValidationError, match="give a relative precision or a step, not both"):
        SearchPlan(variable="request_rate", lower=1, upper=4, relative=0.1, step=1)
    with pytest.raises(ValidationError, match="min_requests"):
        SearchPlan(variable="request_rate", lower=1, upper=4, min_requests=50)
    assert SearchPlan(variable="request_rate", lower=1, upper=4).relative == 0.1
    assert SearchPlan(variable="concurrency", lower=1, upper=4).step == 1


def test_the_stepper_refuses_a_probe_it_did_not_ask_for() -> None:
    search = LoadSearch(_plan(variable="concurrency", lower=2, upper=8, repeats=2))
    assert search.next_load() == 2
    with pytest.raises(ValueError, match="load=3: the search asked for 2"):
        search.record(ProbeResult(load=3, repeats=(_repeat(True), _repeat(True))))
    with pytest.raises(ValueError, match="repeats=1: the plan asks for 2"):
        search.record(ProbeResult(load=2, repeats=(_repeat(True),)))
    search.record(ProbeResult(load=2, repeats=(_repeat(False), _repeat(True))))
    with pytest.raises(ValueError, match="the search is over"):
        search.record(ProbeResult(load=4, repeats=(_repeat(True), _repeat(True))))
