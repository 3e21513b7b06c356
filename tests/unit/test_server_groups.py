"""One server per configuration (issue 49): the plan's specs grouped by the server they need, each group one
benchmark task; the estimate counts one start per server; the load generator takes a group or one spec."""

from __future__ import annotations

from typing import Any

import pytest
from accelbench.campaign.estimate import Stated, duration_s, estimate, request_servers, requests_of
from accelbench.campaign.request import CampaignRequest
from accelbench.core.server_group import ServerGroup, by_instance_type, group_specs
from accelbench.loadgen.cli import parse_group
from pydantic import ValidationError

from tests.support.planning import plan

TWO = {"workloads": ["chat", "shared-prefix"], "concurrency": [1, 2], "prompts_per_level": 12}


def _specs(**fields: Any) -> list[Any]:
    return plan(**({"instance_types": ["m8g.xlarge"]} | fields)).specs


def test_the_workloads_of_one_configuration_share_one_server() -> None:
    specs = _specs(**TWO)
    assert [s.load.runs.name for s in specs] == ["chat", "shared-prefix"]
    (group,) = group_specs(specs)
    assert group.specs == tuple(specs) and group.workloads() == "chat, shared-prefix"
    assert group.server == specs[0].server == specs[1].server
    # The specs stay each workload's own: two spec ids and matrix keys, their rows apart in the lake.
    assert len({s.spec_id for s in group.specs}) == len({s.matrix_key for s in group.specs}) == 2
    assert group.group_id.startswith("m8g-xlarge-") and group.group_id == group_specs(specs)[0].group_id


def test_instance_types_checkpoints_and_ab_rounds_are_servers_of_their_own() -> None:
    types = group_specs(_specs(instance_types=["m8g.xlarge", "c8g.2xlarge"], **TWO))
    assert [(g.server.instance_type, len(g.specs)) for g in types] == [("m8g.xlarge", 2), ("c8g.2xlarge", 2)]
    variants = [{"name": "a"}, {"name": "b", "extra_engine_args": ["--max-num-active-seqs=2"]}]
    rounds = group_specs(_specs(repeats=2, rounds=2, variants=variants, **TWO))
    # a1, b1, a2, b2: each its own server (the host's drift falls on both), each with both workloads.
    assert [(g.specs[0].variant.name, g.specs[0].variant.round) for g in rounds if g.specs[0].variant] == [
        ("a", 0),
        ("b", 0),
        ("a", 1),
        ("b", 1),
    ]
    assert {len(g.specs) for g in rounds} == {2}


def test_a_group_is_one_servers_workloads() -> None:
    m8g, c8g = (_specs(instance_types=[t])[0] for t in ("m8g.xlarge", "c8g.2xlarge"))
    with pytest.raises(ValidationError, match=r"specs\[1\] .* needs another server than specs\[0\]"):
        ServerGroup(specs=(m8g, c8g))
    with pytest.raises(ValidationError, match="a spec twice"):
        ServerGroup(specs=(m8g, m8g))
    with pytest.raises(ValidationError):
        ServerGroup(specs=())


def test_the_estimate_counts_one_start_per_server_and_its_workloads_one_after_another() -> None:
    specs = _specs(**TWO)
    stated = Stated(startup_s=100.0, requests_per_s=10.0)
    first, second = estimate(specs, None, [], "us-east-1", "local", stated)
    assert (first.startup_s, second.startup_s) == (100.0, 0.0)
    # The server's one recheck is its first workload's first level: the second workload has none.
    assert first.requests == requests_of(specs[0].load, True) == requests_of(specs[0].load)
    assert second.requests == requests_of(specs[1].load, False) == requests_of(specs[1].load) - 12
    assert second.startup_from == f"on {first.spec_id}'s server" and first.server == second.server
    # One server: its workloads run one after another, whatever the slots.
    assert duration_s([first, second], slots=4) == pytest.approx(first.seconds + second.seconds)
    two_types = estimate(
        _specs(instance_types=["m8g.xlarge", "c8g.2xlarge"], **TWO), None, [], "us-east-1", "local", stated
    )
    assert [e.startup_s for e in two_types] == [100.0, 0.0, 100.0, 0.0]
    # Before planning (the deadline): a server per instance type, its workloads' loads together.
    req = CampaignRequest(model="local/tiny-llama", instance_types=["m8g.xlarge", "c8g.2xlarge"], **TWO)
    assert [(t, len(loads)) for t, loads in request_servers(req)] == [("m8g.xlarge", 2), ("c8g.2xlarge", 2)]


def test_the_load_generator_takes_a_group_or_one_spec() -> None:
    specs = _specs(**TWO)
    group = ServerGroup(specs=tuple(specs))
    assert parse_group(group.model_dump_json()) == group
    assert parse_group(specs[0].model_dump_json()) == ServerGroup(specs=(specs[0],))


def _another_checkpoint(spec: Any) -> Any:
    """The same workload on another server of the same type (a second checkpoint or version)."""
    return spec.model_copy(update={"server": spec.server.model_copy(update={"model": "org/model-w8a8"})})


def test_a_types_servers_follow_each_other_and_its_node_starts_once_per_slot() -> None:
    """Two types x two checkpoints, planned checkpoint by checkpoint (m8g, c8g, m8g, c8g): the pods start
    type by type (m8g, m8g, c8g, c8g), the plan's order within a type, so the second of a type runs on the
    node the first launched; the estimate counts each type's node start once per pool slot, in kubernetes
    mode only."""
    m8g, c8g = _specs(instance_types=["m8g.xlarge", "c8g.2xlarge"])
    planned = [m8g, c8g, _another_checkpoint(m8g), _another_checkpoint(c8g)]
    groups = group_specs(planned)
    assert [(g.server.instance_type, g.server.model) for g in groups] == [
        ("m8g.xlarge", m8g.server.model),
        ("m8g.xlarge", "org/model-w8a8"),
        ("c8g.2xlarge", c8g.server.model),
        ("c8g.2xlarge", "org/model-w8a8"),
    ]
    stated = Stated(startup_s=600.0, requests_per_s=10.0, node_start_s=250.0)
    one_slot = estimate(planned, None, [], "us-east-1", "kubernetes", stated, slots=1)
    assert [e.startup_s for e in one_slot] == [600.0, 600.0, 350.0, 350.0]  # the plan's order: m8g, c8g, ...
    assert one_slot[2].startup_from == "stated allowance less the node's start (already up)"
    two_slots = estimate(planned, None, [], "us-east-1", "kubernetes", stated, slots=2)
    assert [e.startup_s for e in two_slots] == [600.0] * 4  # two pods of a type at once: a node each
    assert [e.startup_s for e in estimate(planned, None, [], "us-east-1", "local", stated)] == [600.0] * 4
    # An A/B comparison keeps its rounds' order (a1, b1, a2, b2), whatever the types.
    variants = [{"name": "a"}, {"name": "b", "instance_type": "c8g.2xlarge"}]
    rounds = group_specs(_specs(repeats=2, rounds=2, variants=variants))
    assert [g.server.instance_type for g in rounds] == ["m8g.xlarge", "c8g.2xlarge"] * 2
    assert by_instance_type(rounds) == rounds
