"""Planning refuses the request counts a workload cannot send and the files a benchmark pod cannot read
(issue 29): before a node is bought or a level fails, each naming its field."""

from __future__ import annotations

from accelbench.core.workloads import PROFILES

from tests.support.planning import plan, problems

SHARED = {"instance_types": ["r8g.4xlarge"], "workloads": ["fixed", "shared-prefix"]}


def test_vllm_s_prefix_repetition_sends_whole_groups_of_prompts() -> None:
    shared = PROFILES["shared-prefix"]
    assert shared.request_multiple == 4
    assert [shared.sends(n) for n in (3, 4, 201, 1000)] == [0, 4, 200, 1000]
    assert PROFILES["chat"].sends(201) == 201


def test_shared_prefix_refuses_a_level_size_that_is_not_a_multiple_of_its_groups() -> None:
    found = problems(**SHARED, prompts_per_level=201)
    assert set(found) == {"prompts_per_level"}
    assert "makes (n // 4) x 4 of them (200 here)" in found["prompts_per_level"]
    assert found["prompts_per_level"].endswith("use a multiple of 4 (200 or 204)")
    assert plan(**SHARED, prompts_per_level=204).specs[1].load.prompts_per_level == 204


def test_shared_prefix_refuses_fewer_level_warmups_than_its_groups() -> None:
    # concurrency 1 raises the warm-up to 1 request only: vLLM refuses fewer prompts than prefixes
    found = problems(**SHARED, concurrency=[1, 8], level_warmups=2)
    assert set(found) == {"level_warmups"}
    assert found["level_warmups"].startswith("2: 2 warm-up request(s) before a level")
    assert "use 0 or at least 4" in found["level_warmups"]
    # every level at concurrency >= 4 warms up with at least 4; none at all is fine too
    assert len(plan(**SHARED, concurrency=[4, 8], level_warmups=2).specs) == 2
    assert len(plan(**SHARED, concurrency=[1], level_warmups=0).specs) == 2
    # a request-rate level warms up with level_warmups alone
    assert "level_warmups" in problems(**SHARED, concurrency=[8], request_rates=[2.0], level_warmups=3)
    # a search warms its lowest probe up with max(level_warmups, its concurrency)
    search = {"load_mode": "search", "search_variable": "concurrency", "search_upper": 16}
    search |= {"slos": {"ttft_p99_ms": 1000}, "prompts_per_level": 1000, "search_min_requests": 1000}
    assert "level_warmups" in problems(**SHARED, **search, search_lower=1, level_warmups=1)
    assert len(plan(**SHARED, **search, search_lower=4, level_warmups=1).specs) == 2


def test_other_workloads_take_any_count() -> None:
    assert len(plan(instance_types=["r8g.4xlarge"], workloads=["chat"], prompts_per_level=201).specs) == 1


def test_kubernetes_mode_refuses_a_custom_workload_file_on_the_worker(tmp_path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "hello"}\n')
    fields = {"instance_types": ["r8g.4xlarge"], "workloads": ["custom"], "custom_prompts": str(prompts)}
    assert len(plan(**fields, execution_mode="local").specs) == 1
    found = problems(**fields, execution_mode="kubernetes")
    assert set(found) == {"custom_prompts"}
    assert "a kubernetes benchmark pod cannot read a file on the worker" in found["custom_prompts"]
