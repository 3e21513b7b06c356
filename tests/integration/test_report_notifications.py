"""Word when the answer changes: the cross-tier report DAG (dag.test()) announces a changed answer card
through Airflow's SMTP notifier, received by a real SMTP server (aiosmtpd) on 127.0.0.1; a rerun that
changes nothing sends nothing."""

from __future__ import annotations

import email
import json
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pyarrow as pa
import pytest
from accelbench.lake.schemas import RUNS
from accelbench.lake.store import Lake
from aiosmtpd.controller import Controller

from tests.support.airflow_dags import run_dag, task_states
from tests.support.report_data import run_row
from tests.support.servers import free_port

pytestmark = pytest.mark.airflow
SLOS = {"slos": {"ttft_p99_ms": 2000, "tpot_p99_ms": 50}}
SPREAD = (0.95, 1.0, 1.05)  # three repeats a level: every throughput and cost gets a t interval


class _Inbox:
    """An aiosmtpd handler that keeps every message it is handed."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
        self.messages.append(email.message_from_bytes(envelope.content))  # type: ignore[attr-defined]
        return "250 OK"


@pytest.fixture
def inbox(accelbench_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Inbox]:
    """A real SMTP server on 127.0.0.1 and the Airflow connection that the notifier sends through."""
    handler = _Inbox()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    conn = {
        "conn_type": "smtp",
        "host": "127.0.0.1",
        "port": controller.port,
        "extra": {"disable_tls": True, "disable_ssl": True, "from_email": "accelbench@localhost"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_ACCELBENCH_NOTIFY", json.dumps(conn))
    monkeypatch.setenv("ACCELBENCH_NOTIFY_CONN_ID", "accelbench_notify")
    monkeypatch.setenv("ACCELBENCH_NOTIFY_TO", "owner@example.org")
    try:
        yield handler
    finally:
        controller.stop()


def _campaign(lake: Lake, campaign: str, instance: str, tier: str, version: str, out: float) -> None:
    """Three repeats of one level of one configuration, landed as a campaign's runs."""
    rows = [
        run_row(
            instance,
            tier,
            4,
            repeat,
            out * rate,
            out * rate * 1.5,
            300,
            20,
            vllm_version=version,
            campaign_id=campaign,
            spec_id=f"{campaign}-{instance}",
            run_id=f"{campaign}/{instance}/{repeat}",
            completed=1000,
        )
        for repeat, rate in enumerate(SPREAD)
    ]
    table = pa.Table.from_pylist(rows, schema=RUNS)
    lake.write_table("runs", table, tier, "2026-11-10", f"{campaign}--{instance}")


def _report(airflow_db: object) -> dict:
    run = run_dag(airflow_db, "accelbench_cross_tier_report", SLOS)
    assert task_states(run) == {"report": "success"}, task_states(run)
    return run


def test_a_changed_cheapest_configuration_sends_one_message_and_a_rerun_none(
    airflow_db: object, accelbench_env: Path, inbox: _Inbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELBENCH_OFFLINE", "1")
    assert str(run_dag(airflow_db, "accelbench_instance_catalog").state) == "success"
    assert str(run_dag(airflow_db, "accelbench_pricing_refresh").state) == "success"
    lake = Lake(str(accelbench_env / "lake"))
    _campaign(lake, "c1", "m8g.xlarge", "cpu", "0.32.0", 400)
    _campaign(lake, "c1", "r8g.large", "cpu", "0.32.0", 150)
    _report(airflow_db)  # the first report of this filter: nothing to compare with, nothing sent
    assert inbox.messages == []
    # A new campaign: r8g.large on a newer vLLM serves four times as fast, and is now the cheapest.
    _campaign(lake, "c2", "r8g.large", "cpu", "0.33.0", 600)
    _report(airflow_db)
    (message,) = inbox.messages
    body = message.get_payload(0).get_payload(decode=True).decode()  # type: ignore[union-attr]
    assert message["To"] == "owner@example.org" and "the answer changed" in message["Subject"]
    assert "new cheapest" in body
    now, was = body.split("Now: ", 1)[1].split("; was: ", 1)
    assert now.startswith("r8g.large · vLLM 0.33.0 · TP1 at ") and "[" in now.split(" per 1M")[0]
    assert was.startswith("m8g.xlarge · vLLM 0.32.0 · TP1 at ") and "[" in was.split(" per 1M")[0]
    assert "Report: " in body
    _report(airflow_db)  # the same lake again: the same answer, nothing sent
    assert len(inbox.messages) == 1
