"""The campaign rules the task bodies call, without Airflow: the version matrix, version spelling and
local mode's version, the one planning entry point ("already measured" as a value), the gate's scope."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from accelbench.campaign.matrix import VERSION_MATRIX_SETTING, matrix_at, matrix_keys, parse_version_matrix
from accelbench.campaign.plan import parse_request
from accelbench.campaign.prepare import ModeChecks, prepare_campaign, unconfigured
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.retract import retract
from accelbench.catalog.seed import upsert_instance_types
from accelbench.core.problems import PlanningError, Problem
from accelbench.errors import ConfigError
from accelbench.lake.store import Lake
from accelbench.regression.rule import gate, gate_scope, measured_versions
from accelbench.runtime.version_rules import check_version, local_mode_version
from accelbench.tiers import load_seed

from tests.support.gate_runs import gate_run
from tests.support.lake_rows import land_runs, land_search
from tests.support.paths import REPO

STORE = REPO / "tests" / "data" / "model_configs"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
CATALOG = {s.instance_type: s for s in load_seed()}
MATRIX = {
    "instance_types": ["m8g.xlarge", "c8g.2xlarge"],
    "model": MODEL,
    "concurrency": [1, 2],
    "repeats": 2,
}
KUBERNETES = ModeChecks(
    local_vllm=lambda runtime: pytest.fail("not local"), kubernetes_problems=lambda model: []
)


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(STORE))
    eng = make_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate(eng)
    upsert_instance_types(eng, load_seed())
    yield eng
    eng.dispose()


def test_the_version_matrix_is_the_defaults_overridden_by_its_setting() -> None:
    defaults = {"model": MODEL, "repeats": 2}
    assert parse_version_matrix("  ", defaults) == defaults
    assert parse_version_matrix('{"repeats": 3}', defaults) == {"model": MODEL, "repeats": 3}
    for raw, why in (
        ("{not json", "not JSON"),
        ("[1]", "a JSON object"),
        ('{"version": "0.1.0"}', "without"),
    ):
        with pytest.raises(ConfigError, match=VERSION_MATRIX_SETTING) as err:
            parse_version_matrix(raw, defaults)
        assert why in str(err.value)


def test_a_version_has_one_spelling_and_the_matrix_plans_at_it() -> None:
    assert check_version("v0.19.1") == check_version("0.19.1") == "0.19.1"
    for bad in (None, "", "latest", "0.19"):
        with pytest.raises(ConfigError, match="partition_key"):
            check_version(bad, "partition_key")
    request = matrix_at(MATRIX, "v0.20.0", "kubernetes")
    assert (request.version, request.execution_mode, request.repeats) == ("0.20.0", "kubernetes", 2)
    with pytest.raises(ConfigError, match=r"partition_key='latest'"):
        matrix_at(MATRIX, "latest", "local")
    with pytest.raises(PlanningError, match="repeats"):
        matrix_at(MATRIX | {"repeats": 0}, "0.20.0", "local")


def test_local_mode_measures_only_the_vllm_it_has() -> None:
    assert local_mode_version(None, "0.32.0", "/venv/bin/python") == "0.32.0"
    assert local_mode_version("v0.32.0", "0.32.0", "/venv/bin/python") == "0.32.0"
    with pytest.raises(
        ConfigError, match=r"version='0\.1\.0': local mode serves .* /venv/bin/python \(0\.32\.0\)"
    ):
        local_mode_version("0.1.0", "0.32.0", "/venv/bin/python")


def test_one_entry_point_plans_and_says_what_the_lake_already_holds(engine, tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    request = matrix_at(MATRIX, "0.19.1", "kubernetes")
    first = prepare_campaign(request, engine, "c1", KUBERNETES, lake=lake)
    assert first.version == "0.19.1" and len(first.specs) == 2 and first.measured == []
    assert not first.already_measured
    m8g, c8g = sorted(first.specs, key=lambda s: s.server.instance_type != "m8g.xlarge")

    land_runs(lake, m8g)
    land_runs(lake, c8g, status="failed")  # a failed run is not a measurement
    left = prepare_campaign(request, engine, "c2", KUBERNETES, lake=lake)
    assert [s.server.instance_type for s in left.specs] == ["c8g.2xlarge"]
    assert [s.matrix_key for s in left.measured] == [m8g.matrix_key]

    land_runs(lake, c8g)
    done = prepare_campaign(request, engine, "c3", KUBERNETES, lake=lake)
    assert done.already_measured and done.specs == [] and len(done.measured) == 2
    forced = prepare_campaign(request, engine, "c3", KUBERNETES, lake=lake, force=True)
    assert forced.forced and not forced.already_measured and len(forced.specs) == 2
    assert len(prepare_campaign(request, engine, "c3", KUBERNETES).specs) == 2  # no lake: no lookup

    retract(engine, [f"{m8g.spec_id}/c1-r0"], "node was throttled")  # a retracted run counts for nothing
    again = prepare_campaign(request, engine, "c4", KUBERNETES, lake=lake)
    assert [s.server.instance_type for s in again.specs] == ["m8g.xlarge"]


def test_each_variant_of_an_ab_campaign_runs_its_own_version_or_instance_type(engine) -> None:
    """What a variant changes reaches its servers alone, through the planning entry point: its own version's
    build (image and digest as discovery recorded them), another instance type; the baseline keeps the
    campaign's. A version the catalog has no image of is the variant's problem, named by its field."""
    variants = [
        {"name": "old"},
        {"name": "new", "versions": {"cpu": "0.20.0"}},
        {"name": "bigger", "instance_type": "c8g.2xlarge"},
    ]
    fields = MATRIX | {"instance_types": ["m8g.xlarge"], "execution_mode": "kubernetes", "version": "0.19.1"}
    planned = prepare_campaign(parse_request(fields | {"variants": variants}), engine, "c", KUBERNETES)
    servers = {s.variant.name: s.server for s in planned.specs if s.variant and s.variant.round == 0}
    assert {k: (v.version, v.instance_type) for k, v in servers.items()} == {
        "old": ("0.19.1", "m8g.xlarge"),
        "new": ("0.20.0", "m8g.xlarge"),
        "bigger": ("0.19.1", "c8g.2xlarge"),
    }
    assert servers["new"].image != servers["old"].image and "0.20.0" in servers["new"].image
    assert servers["bigger"].image == servers["old"].image
    with pytest.raises(PlanningError) as err:
        unknown = [{"name": "a"}, {"name": "b", "instance_type": "m8g.nosuch"}]
        prepare_campaign(parse_request(fields | {"variants": unknown}), engine, "c", KUBERNETES)
    assert [p.field for p in err.value.problems] == ["variants[1].instance_type"], err.value.problems


def test_a_version_matrix_in_search_mode_plans_searches_measured_once_per_version(engine, tmp_path) -> None:
    """ACCELBENCH_VERSION_MATRIX can ask a version campaign for a load search, like the form: a search is
    already measured once its capacity is in the lake, and a retracted probe measures it again."""
    lake = Lake(str(tmp_path / "lake"))
    search = {"load_mode": "search", "search_upper": 32, "prompts_per_level": 1000}
    matrix = parse_version_matrix(json.dumps(search), MATRIX)
    request = matrix_at(matrix, "0.19.1", "kubernetes")
    first = prepare_campaign(request, engine, "c1", KUBERNETES, lake=lake)
    assert len(first.specs) == 2 and all(s.load.search is not None for s in first.specs)
    assert {(s.load.search.upper, s.load.search.repeats) for s in first.specs if s.load.search} == {(32, 2)}
    m8g = next(s for s in first.specs if s.server.instance_type == "m8g.xlarge")
    probes = land_search(lake, m8g)
    left = prepare_campaign(request, engine, "c2", KUBERNETES, lake=lake)
    assert [s.server.instance_type for s in left.specs] == ["c8g.2xlarge"]
    assert [s.matrix_key for s in left.measured] == [m8g.matrix_key]
    retract(engine, [probes[0]], "a noisy neighbour")
    again = prepare_campaign(request, engine, "c3", KUBERNETES, lake=lake)
    assert len(again.specs) == 2 and again.measured == []
    with pytest.raises(PlanningError, match=r"search_upper=2048\.0: above the load generator.s cap"):
        prepare_campaign(
            matrix_at(matrix | {"search_upper": 2048}, "0.19.1", "kubernetes"), engine, "c", KUBERNETES
        )


def test_the_entry_point_asks_each_mode_only_its_own_checks(engine) -> None:
    local = ModeChecks(
        local_vllm=lambda runtime: ("0.32.0", "/venv/bin/python"),
        kubernetes_problems=lambda m: pytest.fail("local"),
    )
    planned = prepare_campaign(parse_request(MATRIX | {"execution_mode": "local"}), engine, "c", local)
    assert planned.version == "0.32.0" and {s.server.image_digest for s in planned.specs} == {None}
    with pytest.raises(ConfigError, match="measure other versions in kubernetes mode"):
        prepare_campaign(
            parse_request(MATRIX | {"execution_mode": "local", "version": "0.19.0"}), engine, "c", local
        )

    lacking = ModeChecks(
        local_vllm=lambda runtime: pytest.fail("kubernetes"),
        kubernetes_problems=lambda model: [Problem("ACCELBENCH_LOADGEN_IMAGE", None, "unset")],
    )
    request = parse_request(MATRIX | {"execution_mode": "kubernetes", "instance_types": ["m6g.large"]})
    with pytest.raises(PlanningError) as err:  # the mode's problems with the request's own, at once
        prepare_campaign(request, engine, "c", lacking)
    assert {p.field for p in err.value.problems} >= {"ACCELBENCH_LOADGEN_IMAGE", "instance_types[0]"}


def test_a_scheduled_campaign_without_its_model_has_nothing_to_measure_yet(monkeypatch) -> None:
    request = parse_request(MATRIX)
    why = unconfigured(request)
    assert why and f"model={MODEL!r}" in why and "ACCELBENCH_MODEL_STORE" in why
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(STORE))
    assert unconfigured(request) is None


def test_the_gate_compares_only_the_matrix_points(monkeypatch) -> None:
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(STORE))
    matrix = parse_request(MATRIX | {"instance_types": ["m8g.xlarge"], "concurrency": [1]})
    assert gate_scope(matrix.model).models == [MODEL] and gate_scope(matrix.model).tiers == ["cpu"]
    keys = {v: matrix_keys(matrix, CATALOG, {v}).keys for v in ("0.19.0", "0.20.0")}
    assert all(len(k) == 1 for k in keys.values()) and keys["0.19.0"] != keys["0.20.0"]

    def runs(key_of: Any, outs: dict[str, float]) -> list[dict[str, Any]]:
        return [
            gate_run(v, 1, r, out + r, suffix=f"-{key_of(v)}", matrix_key=key_of(v))
            for v, out in outs.items()
            for r in range(2)
        ]

    steady = runs(lambda v: next(iter(keys[v])), {"0.19.0": 100.0, "0.20.0": 100.0})
    collapse = runs(lambda v: "another-load", {"0.19.0": 100.0, "0.20.0": 10.0})  # not the matrix
    planned = matrix_keys(matrix, CATALOG, measured_versions(steady + collapse))  # as the gate task plans
    verdict = gate(steady + collapse, MODEL, planned, [], "0.20.0")
    assert verdict.regressions == [] and verdict.unplanned == {}
    slower = runs(lambda v: next(iter(keys[v])), {"0.19.0": 100.0, "0.20.0": 60.0})
    (line,) = gate(slower, MODEL, matrix_keys(matrix, CATALOG, measured_versions(slower)), [], "0.20.0").lines
    assert "0.19.0 -> 0.20.0: output tokens/s -40% [" in line and line.endswith(": regression")

    unplannable = parse_request(MATRIX | {"instance_types": ["m6g.large"]})  # Graviton2: plans at no version
    found = matrix_keys(unplannable, CATALOG, {"0.19.0"})
    assert found.keys == set() and "m6g.large" in found.unplanned["0.19.0"]
    assert json.dumps(sorted(found.unplanned))  # versions, printable in the gate's log


def test_the_campaign_log_says_a_capacity_with_its_interval_and_why_a_search_gave_none() -> None:
    """The ingest and summary tasks' line for a `capacities` row: the interval the search reported (the
    same words as the search's own summary), and for no capacity the reason the search stopped."""
    from accelbench.airflow.tasks.campaign import capacity_text

    row: dict[str, Any] = {
        "variable": "concurrency",
        "outcome": "capacity",
        "capacity": 5.0,
        "capacity_low": 4.0,
        "capacity_high": None,
        "capacity_method": "isotonic fit of 6 probes",
        "bracket_passing": 5.0,
        "bracket_failing": 6.0,
        "limiting_metric": "p99 TTFT",
        "probes": 6,
        "server_s": 81.4,
        "stopped_at": None,
        "stopped_why": None,
    }
    assert capacity_text(row) == (
        "capacity 5 concurrent [4, -] at 95% (bracket [5, 6], limited by p99 TTFT; 6 probes, 81 server-s)"
    )
    point_rule = row | {"capacity_low": None, "capacity_method": None}
    assert capacity_text(point_rule).startswith("capacity 5 concurrent (bracket [5, 6]")
    drifted = row | {
        "outcome": "drifted",
        "capacity": None,
        "stopped_at": 1.0,
        "stopped_why": "the host drifted: p50 TTFT at 1 concurrent was 52 ms, then 160 ms",
    }
    assert capacity_text(drifted) == (
        "no capacity (drifted at 1 concurrent: the host drifted: p50 TTFT at 1 concurrent was 52 ms, then "
        "160 ms; bracket [5, 6]; 6 probes, 81 server-s)"
    )


def test_planning_says_what_the_planned_repeats_resolve_from_the_lakes_earlier_repeats(
    tmp_path: Path,
) -> None:
    """How much to measure, before the run (issue 29): the lake holds two repeats of the point from an
    earlier campaign (landed by the real ingest, another vLLM version); the plan's words for a campaign of
    3 repeats are the gate's t interval from those repeats' spread. A point the lake never measured says
    that its spread is unknown until it runs."""
    from accelbench.core.changes import Spread, resolution_words
    from accelbench.core.spec import BenchmarkSpec, LoadPlan
    from accelbench.lake.spreads import earlier_spreads, resolution_lines
    from accelbench.local.tiny_model import server_spec

    from tests.support.lake_rows import land_campaign

    result = json.loads((REPO / "tests" / "data" / "bench_results" / "vllm-bench-serve-c2.json").read_text())
    slower = result | {"p99_ttft_ms": result["p99_ttft_ms"] * 1.3, "output_throughput": 400.0}
    server = server_spec("Qwen/Qwen2.5-0.5B-Instruct").model_copy(update={"instance_type": "m8g.xlarge"})
    earlier = BenchmarkSpec(
        server=server.model_copy(update={"version": "0.31.0"}),
        load=LoadPlan(input_len=64, output_len=32, concurrency=(2,), repeats=2),
        campaign_id="earlier",
    )
    lake = Lake(str(tmp_path / "lake"))
    land_campaign(lake, earlier, {2: [result, slower]})
    planned = BenchmarkSpec(
        server=server,
        load=LoadPlan(input_len=64, output_len=32, concurrency=(2, 4), repeats=3, prompts_per_level=200),
        campaign_id="now",
    )
    found = earlier_spreads(lake, planned, "kubernetes")
    assert sorted(found) == [2.0]  # concurrency 4 was never measured
    spread = found[2.0].spreads["p99_ttft_ms"]
    assert spread is not None and spread.log_sd == pytest.approx(math.log(1.3) / math.sqrt(2))
    (line,) = resolution_lines([planned], lake, "kubernetes")
    words = resolution_words("p99 TTFT", Spread(math.log(1.3) / math.sqrt(2), 1, 2), 3, 200)
    assert line.startswith(
        f"{planned.spec_id} (m8g.xlarge) at 2: from the repeats of 20 requests of 1 earlier"
    )
    assert "(vLLM 0.31.0)" in line and words in line and "output tokens/s changes under" in line
    assert earlier_spreads(lake, planned, "local") == {}  # measured in kubernetes mode: not this point
    (unknown,) = resolution_lines(
        [planned.model_copy(update={"server": server.model_copy(update={"dtype": "float16"})})],
        lake,
        "kubernetes",
    )
    assert (
        "no earlier repeats of these points" in unknown and "this campaign's 3 repeats measure it" in unknown
    )


def test_a_search_pools_the_lakes_earlier_runs_of_its_point_into_the_hosts_p99_spread(tmp_path: Path) -> None:
    """Issue 48, point 1: a search's widening comes from more than its one recheck pair where the lake has
    more. Two earlier runs of the point at one load (landed by the real ingest) give the search the p99
    TTFT's spread with its df, |log ratio| / sqrt(2) on 1 df; the search's judged p99 is the one with an SLO
    (no E2E latency limit: none of it); other modes' runs are not this point."""
    from accelbench.core.search_plan import SearchPlan
    from accelbench.core.slos import Slos
    from accelbench.core.spec import BenchmarkSpec, LoadPlan
    from accelbench.lake.spreads import search_spreads
    from accelbench.local.tiny_model import server_spec
    from accelbench.search.load_search import LoadSearch

    from tests.support.lake_rows import land_campaign

    result = json.loads((REPO / "tests" / "data" / "bench_results" / "vllm-bench-serve-c2.json").read_text())
    slower = result | {"p99_ttft_ms": result["p99_ttft_ms"] * 1.3}
    server = server_spec("Qwen/Qwen2.5-0.5B-Instruct").model_copy(update={"instance_type": "m8g.xlarge"})
    earlier = BenchmarkSpec(
        server=server,
        load=LoadPlan(input_len=64, output_len=32, concurrency=(2,), repeats=2),
        campaign_id="earlier",
    )
    lake = Lake(str(tmp_path / "lake"))
    land_campaign(lake, earlier, {2: [result, slower]})
    plan = SearchPlan(
        variable="concurrency",
        lower=1,
        upper=8,
        min_requests=200,
        max_requests=800,
        slos=Slos(ttft_p99_ms=500),
    )
    searching = BenchmarkSpec(
        server=server, load=LoadPlan(input_len=64, output_len=32, search=plan), campaign_id="now"
    )
    found = search_spreads(lake, searching, "kubernetes")
    assert list(found) == ["p99 TTFT"]
    (spread,) = found["p99 TTFT"]
    assert (spread.df, spread.log_sd) == (1, pytest.approx(math.log(1.3) / math.sqrt(2)))
    assert search_spreads(lake, searching, "local") == {}
    # The search pools it with its prior: 3 df of the prior and 1 of the lake before it measures anything.
    assert LoadSearch(plan, found).spread().df == 4
