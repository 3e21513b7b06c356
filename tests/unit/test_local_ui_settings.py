"""The two settings scripts/ui.sh runs Airflow with: the campaign form's defaults
(ACCELBENCH_CAMPAIGN_DEFAULTS) and the DAGs' time schedules off (ACCELBENCH_SCHEDULES)."""

from __future__ import annotations

import json

import pytest
from accelbench.airflow.dag_defaults import campaign_defaults, timed
from accelbench.campaign.request import form_defaults
from accelbench.errors import ConfigError


def test_campaign_defaults_override_the_forms_and_the_weekly_matrixs(monkeypatch) -> None:
    assert form_defaults(["concurrency", "repeats"]) == {"concurrency": [1, 4, 16], "repeats": 2}
    small = {"concurrency": [1], "repeats": 1, "model": "/models/tiny", "seed": 3}
    monkeypatch.setenv("ACCELBENCH_CAMPAIGN_DEFAULTS", json.dumps(small))
    assert form_defaults(["concurrency", "repeats", "model", "output_len"]) == {
        "concurrency": [1],
        "repeats": 1,
        "model": "/models/tiny",  # over ACCELBENCH_DEFAULT_MODEL's
        "output_len": 128,
    }
    assert campaign_defaults()["concurrency"] == [1]  # the weekly campaign's (and the version matrix's base)
    assert form_defaults(["concurrency"], from_env=False) == {"concurrency": [1, 4, 16]}  # the reference's


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("{concurrency: [1]}", "not JSON"),
        ("[1, 2]", "a JSON object of campaign params"),
        ('{"concurrency": [1], "levels": [2]}', "not a campaign param: levels"),
    ],
)
def test_bad_campaign_defaults_name_the_setting(monkeypatch, raw: str, why: str) -> None:
    monkeypatch.setenv("ACCELBENCH_CAMPAIGN_DEFAULTS", raw)
    with pytest.raises(ConfigError, match="ACCELBENCH_CAMPAIGN_DEFAULTS") as caught:
        form_defaults(["concurrency"])
    assert why in str(caught.value)


def test_schedules_off_leave_the_dags_unscheduled(monkeypatch) -> None:
    assert timed("@daily") == "@daily"
    monkeypatch.setenv("ACCELBENCH_SCHEDULES", "false")
    assert timed("@daily") is None
    monkeypatch.setenv("ACCELBENCH_SCHEDULES", "not-a-bool")
    with pytest.raises(ConfigError, match="ACCELBENCH_SCHEDULES"):
        timed("@daily")
