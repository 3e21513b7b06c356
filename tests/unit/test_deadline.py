"""The campaign run's deadline (accelbench.campaign.estimate.deadline_s, the Airflow deadline reference's
figure): from the request alone, against a hand computation."""

from __future__ import annotations

import pytest
from accelbench.campaign.estimate import Stated, deadline_s
from accelbench.campaign.plan import parse_request
from accelbench.errors import ConfigError

# One server: 4 warm-ups, then 2 levels x (4 level warm-ups + 2 repeats x 50 prompts), and the recheck's
# 50: 262 requests (the same count tests/integration/test_campaign_costs.py prices).
REQUEST = {
    "instance_types": ["m8g.xlarge", "c8g.2xlarge"],
    "model": "org/model",
    "concurrency": [1, 2],
    "repeats": 2,
    "prompts_per_level": 50,
}
STATED = Stated(startup_s=600.0, requests_per_s=2.0)
SERVER_S = 600.0 + 262 / 2.0  # 731 s


@pytest.mark.parametrize(
    ("slots", "hand"),
    [
        (1, 2 * (2 * SERVER_S)),  # one pool slot: the two servers one after the other
        (2, 2 * SERVER_S),  # side by side: the longest server
        (128, 2 * SERVER_S),
    ],
)
def test_the_deadline_is_the_factor_times_the_servers_shared_over_the_pool(slots: int, hand: float) -> None:
    assert deadline_s(parse_request(REQUEST), slots, STATED, 2.0) == pytest.approx(hand)


def test_each_checkpoint_is_a_server_its_workloads_share_it_and_a_factor_of_zero_is_no_deadline() -> None:
    two_workloads = parse_request(
        REQUEST | {"instance_types": ["m8g.xlarge"], "workloads": ["fixed", "chat"]}
    )
    one = parse_request(REQUEST | {"instance_types": ["m8g.xlarge"]})
    assert deadline_s(one, 1, STATED, 1.0) == pytest.approx(SERVER_S)
    # One server for both workloads (issue 49): one start, the second workload's 212 requests without a
    # recheck of its own (the server's one recheck is the first workload's).
    assert deadline_s(two_workloads, 1, STATED, 1.0) == pytest.approx(600.0 + (262 + 212) / 2.0)
    quantized = parse_request(
        REQUEST | {"instance_types": ["m8g.xlarge"], "quantized_models": ["org/model-w8a8"]}
    )
    assert deadline_s(quantized, 1, STATED, 1.0) == pytest.approx(2 * SERVER_S)
    assert deadline_s(one, 1, STATED, 0.0) is None


def test_stated_figures_are_checked_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELBENCH_STATED_REQUESTS_PER_S", "0")
    with pytest.raises(ConfigError, match="ACCELBENCH_STATED_REQUESTS_PER_S"):
        Stated.from_env()
    monkeypatch.setenv("ACCELBENCH_STATED_REQUESTS_PER_S", "3")
    monkeypatch.setenv("ACCELBENCH_STARTUP_ALLOWANCE_S", "12")
    assert Stated.from_env() == Stated(12.0, 3.0, 12.0)  # the node's start: a part of the start-up at most
    monkeypatch.setenv("ACCELBENCH_NODE_START_ALLOWANCE_S", "-1")
    with pytest.raises(ConfigError, match="ACCELBENCH_NODE_START_ALLOWANCE_S"):
        Stated.from_env()


def test_in_kubernetes_mode_a_types_node_starts_once_per_pool_slot() -> None:
    """A quantization matrix on one type: two servers, one after the other on the node the first launched
    (`core.server_group.by_instance_type` starts a type's pods back to back): the second pays the start-up
    less the node's start. Two slots run both at once, a node each; local mode has no node to start."""
    stated = Stated(startup_s=600.0, requests_per_s=2.0, node_start_s=300.0)
    quantized = REQUEST | {"instance_types": ["m8g.xlarge"], "quantized_models": ["org/model-w8a8"]}
    k8s = parse_request(quantized | {"execution_mode": "kubernetes"})
    assert deadline_s(k8s, 1, stated, 1.0) == pytest.approx(SERVER_S + (SERVER_S - 300.0))
    assert deadline_s(k8s, 2, stated, 1.0) == pytest.approx(SERVER_S)  # side by side: the longest
    local = parse_request(quantized | {"execution_mode": "local"})
    assert deadline_s(local, 1, stated, 1.0) == pytest.approx(2 * SERVER_S)
