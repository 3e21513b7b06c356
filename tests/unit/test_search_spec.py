"""A load search in the spec, the driver and the evidence (issue 18): the plan's rules, the ids of fixed-
level specs unchanged, the driver's search loop over stand-in levels, and the envelope carrying it all."""

from __future__ import annotations

from pathlib import Path

import pytest
from accelbench.core.evidence import Envelope, LevelRecord
from accelbench.core.levels import Level, levels
from accelbench.core.search_plan import SearchPlan
from accelbench.core.slos import Slos
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.measured import measured_specs
from accelbench.lake.store import Lake
from accelbench.loadgen.driver import Driver
from pydantic import ValidationError

from tests.support.lake_rows import land_search
from tests.support.search_records import CAPACITY, level_record
from tests.support.specs import tiny_spec

PLAN = SearchPlan(variable="concurrency", lower=1, upper=16, min_requests=100, slos=Slos(ttft_p99_ms=60))


def _spec(**load: object) -> BenchmarkSpec:
    plan = LoadPlan(**({"input_len": 8, "output_len": 4, "prompts_per_level": 100} | load))
    return BenchmarkSpec(server=tiny_spec("m"), load=plan, campaign_id="c")


def test_a_search_plan_replaces_the_fixed_levels_and_says_what_conflicts() -> None:
    spec = _spec(search=PLAN)
    assert levels(spec) == [] and spec.load.max_concurrency == 16
    with pytest.raises(ValidationError) as info:
        _spec(search=PLAN, concurrency=(1, 2), repeats=2, prompts_per_level=50)
    message = str(info.value)
    for why in (
        "a search chooses its own loads: give it no concurrency levels or request rates",
        "repeats=2: the search repeats each probe 1 times",
        "prompts_per_level=50: below the search's min_requests=100",
    ):
        assert why in message
    assert LoadPlan.model_validate_json(spec.load.model_dump_json()) == spec.load


def test_a_fixed_level_spec_dumps_as_before_the_search_existed() -> None:
    # spec_id and matrix_key hash the dump: they stay what they were for every spec in the lake.
    fixed = _spec(concurrency=(1, 4))
    assert "search" not in fixed.load.model_dump() and '"search"' not in fixed.model_dump_json()
    assert fixed.spec_id != _spec(search=PLAN).spec_id


def _driver(tmp_path: Path, fail_at: float | None = None) -> Driver:
    driver = Driver(_spec(search=PLAN), "http://127.0.0.1:1", tmp_path)
    driver.spec_dir.mkdir()

    def run_level(level: Level, repeat: int, recheck: bool = False) -> LevelRecord:
        return level_record(driver.spec_dir, level, repeat, "failed" if level.value == fail_at else "ok")

    driver.run_level = run_level  # type: ignore[method-assign]
    return driver


def test_the_driver_probes_what_the_search_asks_and_marks_each_level(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    failure, result = driver._search(PLAN)
    assert failure is None and result is not None
    assert (result.outcome, result.capacity, result.failing) == ("capacity", CAPACITY, CAPACITY + 1)
    assert result.server_s == 2.0 * len(result.probes)  # each repeat's bench duration
    marks = [(r.search_step, r.search_phase, r.level_value) for r in driver.records]
    assert marks == [(p.step, p.phase, p.load) for p in result.probes]
    assert [m[1] for m in marks] == ["bracket"] * 4 + ["bisect"] * 2
    spec, records = driver.spec, driver.records
    envelope = Envelope(spec=spec, spec_id=spec.spec_id, loadgen_version="t", levels=records, search=result)
    assert Envelope.model_validate_json(envelope.model_dump_json()) == envelope


def test_a_failed_level_stops_the_search_with_what_it_found(tmp_path: Path) -> None:
    driver = _driver(tmp_path, fail_at=4)
    failure, result = driver._search(PLAN)
    assert failure is not None and failure.startswith("search step 2 at 4 concurrent: c/s/c4-r0")
    assert result is not None and (result.outcome, result.passing, result.stopped_at) == (
        "probe_failed",
        2,
        4,
    )
    assert [r.level_value for r in driver.records] == [1, 2, 4]


def test_old_evidence_without_search_fields_still_reads() -> None:
    spec = _spec(concurrency=(1,))
    doc = Envelope(spec=spec, spec_id=spec.spec_id, loadgen_version="t").model_dump(mode="json")
    doc.pop("search")
    level = {"run_id": "r", "level_kind": "concurrency", "level_value": 1, "repeat": 0, "seed": 0}
    envelope = Envelope.model_validate(doc | {"levels": [level | {"status": "ok"}]})
    assert envelope.search is None and envelope.levels[0].search_step is None


def test_a_search_spec_is_already_measured_once_a_search_found_an_answer(tmp_path: Path) -> None:
    # It has no fixed levels: "every level already in the lake" would hold for any lake, even an empty one;
    # its capacities row is what says it ran.
    spec, lake = _spec(search=PLAN), Lake(str(tmp_path / "lake"))
    assert measured_specs(lake, [spec]) == []
    probes = land_search(lake, spec, outcome="capacity")
    assert measured_specs(lake, [spec]) == [spec]
    # One retracted probe and the search counts no more: it is measured again.
    assert measured_specs(lake, [spec], retracted={probes[1]}) == []
    # Another search (another matrix key) is not measured by it.
    other = _spec(search=PLAN.model_copy(update={"upper": 32}))
    assert measured_specs(lake, [spec, other]) == [spec]


@pytest.mark.parametrize("outcome", ["probe_failed"])
def test_a_search_that_stopped_without_an_answer_is_run_again(tmp_path: Path, outcome: str) -> None:
    spec, lake = _spec(search=PLAN), Lake(str(tmp_path / "lake"))
    land_search(lake, spec, outcome=outcome)
    assert measured_specs(lake, [spec]) == []


def test_the_interval_rule_is_the_requests_default_and_the_point_rule_keeps_the_spec_ids_of_before() -> None:
    """A campaign's search is judged on intervals unless it asks for the point rule: the cap defaults to
    4 x search_min_requests and `search_max_requests` sets it (below the minimum, refused naming the field);
    `search_rule=point` keeps the rule and the spec ids of before, and refuses a cap it would not use."""
    from accelbench.campaign.request import CampaignRequest
    from accelbench.errors import ConfigError

    base = {
        "model": "m",
        "instance_types": ["m8g.xlarge"],
        "load_mode": "search",
        "prompts_per_level": 1000,
        "slos": {"ttft_p99_ms": 2000},
    }
    default = CampaignRequest(**base).search_plan()
    assert default is not None and default.max_requests == 4000
    plan = CampaignRequest(**base, search_max_requests=3000).search_plan()
    assert plan is not None and plan.max_requests == 3000
    point = CampaignRequest(**base, search_rule="point").search_plan()
    assert point is not None and point.max_requests is None
    assert "max_requests" not in point.model_dump()
    for conf, field in (
        ({"search_max_requests": 500}, "search_max_requests"),  # below search_min_requests
        ({"search_rule": "point", "search_max_requests": 3000}, "search_max_requests"),
    ):
        with pytest.raises(ConfigError) as refused:
            CampaignRequest(**base, **conf).search_plan()
        assert refused.value.field == field, conf
    # Probes of 100 requests: 4 x 100 cannot bound a p99 at 98.75% a look (505 requests), so the default
    # cap is the smallest that can (600), and a cap given below it is refused naming it (issue 48).
    small = base | {"prompts_per_level": 100, "search_min_requests": 100}
    assert (CampaignRequest(**small).search_plan() or default).max_requests == 600
    with pytest.raises(ConfigError) as refused:
        CampaignRequest(**small, search_max_requests=400).search_plan()
    assert refused.value.field == "search_max_requests" and "give max_requests >= 600" in str(refused.value)
