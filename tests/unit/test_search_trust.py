"""When a load search may trust a probe (issue 29): failed requests under the error-rate limit do not make
it untrusted, a failed probe keeps the bracket found so far (a capacities row and a report line with the
outcome), and a concurrency probe whose client could not keep its requests in flight is client-limited."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from accelbench.core.evidence import Envelope, LevelRecord
from accelbench.core.levels import Level
from accelbench.core.search_plan import ProbeResult, RepeatResult, SearchPlan
from accelbench.core.slos import Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import Provenance, capacity_row
from accelbench.lake.measured import measured_specs
from accelbench.lake.store import Lake
from accelbench.loadgen.driver import Driver, in_flight_kept
from accelbench.report.records import records
from accelbench.report.searches import capacity_rows
from accelbench.search.load_search import LoadSearch

from tests.support.lake_rows import land_search
from tests.support.search_records import level_record
from tests.support.specs import tiny_spec

SLOS = Slos(ttft_p99_ms=500)
PLAN = SearchPlan(variable="concurrency", lower=1, upper=16, min_requests=100, slos=Slos(ttft_p99_ms=60))


def _repeat(completed: int, failed: int = 0, ttft: float = 100.0) -> RepeatResult:
    return RepeatResult(completed=completed, failed=failed, p99_ttft_ms=ttft, duration_s=10.0)


def test_one_failed_request_under_the_error_limit_leaves_the_probe_trusted() -> None:
    """1000 prompts, min_requests 1000, one failed (0.1% < 1%): the p99 of 999 requests is as good."""
    plan = SearchPlan(variable="concurrency", lower=1, upper=8, min_requests=1000, slos=SLOS)
    assert plan.trusted_requests == 990  # min_requests less the failures the 1% limit allows
    probe = LoadSearch(plan).record(ProbeResult(load=1, repeats=(_repeat(999, failed=1),)))
    assert probe.verdict == "pass", probe.why
    # Up to the limit too: 10 of 1000 failed is 1.00%, not over it, and 990 requests hold the p99.
    assert LoadSearch(plan).record(ProbeResult(load=1, repeats=(_repeat(990, failed=10),))).verdict == "pass"
    # Over the limit the error rate fails the probe (a fact, whatever the count), never "untrusted".
    probe = LoadSearch(plan).record(ProbeResult(load=1, repeats=(_repeat(985, failed=15),)))
    assert (probe.verdict, probe.limiting) == ("fail", "error rate")
    # A repeat that sent fewer than asked is still judged by what completed: 900 of 1000 is too few.
    probe = LoadSearch(plan).record(ProbeResult(load=1, repeats=(_repeat(900),)))
    assert probe.verdict == "untrusted" and probe.why == "repeat 1's p99 from 900 requests (< 990)"
    # Without an error-rate limit no failure is allowed for: every one of min_requests must complete.
    bare = plan.model_copy(update={"slos": Slos(ttft_p99_ms=500, max_error_rate=None)})
    assert bare.trusted_requests == 1000
    assert (
        LoadSearch(bare).record(ProbeResult(load=1, repeats=(_repeat(999, failed=1),))).verdict == "untrusted"
    )


def _spec(**load: object) -> BenchmarkSpec:
    plan = LoadPlan(**({"input_len": 8, "output_len": 4, "prompts_per_level": 100} | load))
    return BenchmarkSpec(server=tiny_spec("m"), load=plan, campaign_id="c")


@pytest.mark.parametrize(
    ("outcome", "run_again"), [("untrusted", False), ("client_limited", False), ("probe_failed", True)]
)
def test_only_a_search_that_measuring_again_can_help_is_run_again(
    tmp_path: Path, outcome: str, run_again: bool
) -> None:
    """An untrusted or client-limited stop comes from the spec and its instance type: the same spec would
    stop there again, on every scheduled campaign. A failed probe (a server lost) may not recur."""
    spec, lake = _spec(search=PLAN), Lake(str(tmp_path / "lake"))
    land_search(lake, spec, outcome=outcome)
    assert measured_specs(lake, [spec]) == ([] if run_again else [spec])


def test_a_failed_probe_keeps_the_bracket_found_so_far(tmp_path: Path) -> None:
    """Capacity 5: 1, 2, 4 pass, 8 fails its SLO, then the bisection's 6 fails as a level (the server
    died). The result keeps [4, 8], says where and why it stopped, and lands as a capacities row."""
    driver = Driver(_spec(search=PLAN), "http://127.0.0.1:1", tmp_path)
    driver.spec_dir.mkdir()

    def run_level(level: Level, repeat: int, recheck: bool = False) -> LevelRecord:
        return level_record(driver.spec_dir, level, repeat, "failed" if level.value == 6 else "ok")

    driver.run_level = run_level  # type: ignore[method-assign]
    failure, result = driver._search(PLAN)
    assert failure is not None and failure.startswith("search step 4 at 6 concurrent: c/s/c6-r0")
    assert result is not None, "a failed probe keeps the search's result"
    assert (result.outcome, result.capacity, result.passing, result.failing) == ("probe_failed", None, 4, 8)
    assert result.stopped_at == 6 and result.stopped_why is not None
    assert "server died during the level" in result.stopped_why
    assert [(p.load, p.verdict) for p in result.probes] == [
        (1, "pass"),
        (2, "pass"),
        (4, "pass"),
        (8, "fail"),
        (6, "probe_failed"),
    ]
    assert result.summary().startswith("probe failed at 6 concurrent: c/s/c6-r0: server died")
    assert "bracket so far [4, 8]" in result.summary()
    # In the envelope and the lake: the row has the outcome, the bracket and why it stopped.
    spec = driver.spec
    envelope = Envelope(
        spec=spec,
        spec_id=spec.spec_id,
        loadgen_version="t",
        levels=driver.records,
        search=result,
        failure=failure,
    )
    assert Envelope.model_validate_json(envelope.model_dump_json()) == envelope
    row = capacity_row(envelope, Provenance(dag_run_id="manual__s", execution_mode="local"))
    assert row is not None
    assert (row["outcome"], row["capacity"], row["bracket_passing"], row["bracket_failing"]) == (
        "probe_failed",
        None,
        4,
        8,
    )
    assert row["stopped_at"] == 6 and "server died" in row["stopped_why"]
    # The report lists it: the bracket and why there is no capacity, no cost.
    (shown,) = records(capacity_rows([row], [], [], "us-east-1"))
    assert (shown["capacity"], shown["bracket"]) == (None, "[4, 8]")
    assert shown["search_outcome"].startswith("probe_failed at 6 concurrent: c/s/c6-r0: server died")


def _stamps(concurrency: int, requests: int, latency: float, gap: float) -> tuple[list[float], list[float]]:
    """A closed-loop client: each of `concurrency` slots sends its next request `gap` seconds after the
    last one ended (a seeded jitter on the latencies)."""
    rng = np.random.default_rng(7)
    slots, starts, latencies = [0.0] * concurrency, [], []
    for i in range(requests):
        slot = i % concurrency
        took = latency * float(rng.uniform(0.8, 1.2))
        starts.append(slots[slot])
        latencies.append(took)
        slots[slot] += took + gap
    return starts, latencies


def test_a_concurrency_client_that_cannot_keep_its_requests_in_flight_is_client_limited(
    tmp_path: Path,
) -> None:
    kept = in_flight_kept(*_stamps(8, 400, latency=0.1, gap=0.001), concurrency=8)
    assert kept is not None and kept > 0.95
    # 30 ms of client work between one request's end and the next one's start, on 100 ms requests: the
    # slots are empty a quarter of the time, so the server saw about 6 requests, not 8.
    slow = _stamps(8, 400, latency=0.1, gap=0.03)
    kept = in_flight_kept(*slow, concurrency=8)
    assert kept is not None and kept == pytest.approx(0.1 / 0.13, abs=0.03)
    # Fewer requests than the concurrency: all of them at once is all the client could keep.
    assert in_flight_kept(*_stamps(4, 4, latency=0.1, gap=0.0), concurrency=8) is None
    assert in_flight_kept([], [], concurrency=8) is None
    # The driver marks the level client-limited, and the search stops there instead of failing the server.
    driver = Driver(_spec(search=PLAN), "http://127.0.0.1:1", tmp_path)
    rec = LevelRecord("r", "concurrency", 8, 0, 0, "ok")
    starts, latencies = slow
    result = {"completed": 400, "failed": 0, "total_input_tokens": 0, "total_output_tokens": 0}
    driver._client_facts(
        rec, Level("concurrency", 8), result | {"start_times": starts, "latencies": latencies}
    )
    assert rec.client_limited is True
    starts, latencies = _stamps(8, 400, latency=0.1, gap=0.001)
    driver._client_facts(
        rec, Level("concurrency", 8), result | {"start_times": starts, "latencies": latencies}
    )
    assert rec.client_limited is False


def test_capacities_files_before_schema_8_read_the_interval_and_why_as_null(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from accelbench.lake.schemas import CAPACITIES

    lake = Lake(str(tmp_path / "lake"))
    new = ("stopped_why", "capacity_low", "capacity_high", "capacity_method")
    older = pa.schema([f for f in CAPACITIES if f.name not in new])
    path = lake.table_path("capacities", "cpu", "2026-01-02", "old")
    lake.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist([{"spec_id": "s", "schema_version": 7, "capacity": 4.0}], schema=older), path
    )
    (row,) = lake.read("capacities", columns=["spec_id", "capacity", *new]).to_pylist()
    assert row == {"spec_id": "s", "capacity": 4.0} | dict.fromkeys(new)
    (shown,) = records(
        capacity_rows([row | {"outcome": "capacity", "bracket_passing": 4.0}], [], [], "us-east-1")
    )
    assert (shown["bracket"], shown["search_outcome"]) == ("[4, ]", "capacity")
