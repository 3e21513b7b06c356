"""The `max_campaign_usd` budget guard, called as the planning service calls it (no Airflow, no Kubernetes
API): nothing measured before (no lake: the stated figures), per server the stated start-up allowance + its
requests at the stated rate (their defaults), at today's on-demand price."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from accelbench.campaign.service import check_budget
from accelbench.core.price import Price
from accelbench.core.problems import PlanningError

from tests.support.planning import plan

PRICE = Price(
    "r8g.4xlarge", "us-east-1", "on_demand", 0.9418, datetime(2026, 11, 1, tzinfo=UTC), "pricing-api"
)
# 4 warm-ups, then 2 levels x (4 level warm-ups + 2 repeats x 50 prompts), and the recheck's 50: 262.
HAND = (600.0 + 262 / 1.0) * 0.9418 / 3600  # the default allowance (600 s) and rate (1 req/s)


def _specs():
    return plan(instance_types=["r8g.4xlarge"], concurrency=[1, 2], repeats=2, prompts_per_level=50).specs


def test_a_plan_above_max_campaign_usd_is_refused_naming_the_field() -> None:
    limit = round(HAND - 0.01, 2)
    with pytest.raises(PlanningError) as err:
        check_budget(limit, _specs(), None, [PRICE], "us-east-1", "kubernetes")
    (problem,) = err.value.problems
    assert problem.field == "max_campaign_usd" and problem.value == limit
    assert f"max_campaign_usd={limit!r}: the plan's estimate is {HAND:.2f} USD" in str(err.value)


def test_a_plan_within_max_campaign_usd_or_without_one_is_allowed_and_its_estimate_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("INFO"):
        (found,) = check_budget(round(HAND + 0.01, 2), _specs(), None, [PRICE], "us-east-1", "kubernetes")
    assert found.usd == pytest.approx(HAND) and f"estimated: {HAND:.4f} USD" in caplog.text
    assert "262 requests at 1.00 req/s (stated)" in caplog.text and "stated allowance" in caplog.text
    assert len(check_budget(None, _specs(), None, [PRICE], "us-east-1", "kubernetes")) == 1
