"""The version campaign's approval step: regressions no owner has answered wait for one (the standard
provider's HITLOperator: the UI's "Required actions" page, or REST's hitlDetails), who accepts them as known
with a reason or rejects the version; `record_decision` writes the answer to the catalog.

The step waits at most ACCELBENCH_APPROVAL_TIMEOUT_HOURS: the version campaign runs one at a time, so a
question nobody answers holds the next versions' runs queued behind it. Past the limit the step fails and the
next campaign of the version asks again.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.providers.standard.operators.hitl import HITLOperator
from airflow.sdk import Param, task

from accelbench.config import Settings
from accelbench.decisions import OPTIONS

if TYPE_CHECKING:
    from airflow.sdk.types import DagRunProtocol, RuntimeTaskInstanceProtocol

APPROVAL_TASK = "approve_regressions"
GATE_XCOM = "ti.xcom_pull(task_ids='regression_gate')"


def approval_step(gate: Any) -> Any:
    """After the gate task `gate` (its result: `accelbench.airflow.tasks.versions.regression_gate`): ask
    only when it has regressions to ask about, then record the answer. Returns the record task."""

    @task.short_circuit
    def unanswered_regressions(gate: dict[str, Any]) -> bool:
        return bool(gate.get("ask"))

    approve = HITLOperator(
        task_id=APPROVAL_TASK,
        subject=f"vLLM CPU {{{{ {GATE_XCOM}['version'] }}}}: regressions to decide",
        body=f"{{{{ {GATE_XCOM}['body'] }}}}",
        options=list(OPTIONS),
        params={
            "reason": Param(
                None,
                type=["null", "string"],
                minLength=1,
                title="Reason",
                description="Why: recorded in the catalog with your name, and shown on the report",
            )
        },
        response_timeout=timedelta(
            hours=Settings.from_env("approval_timeout_hours").releases.approval_timeout_hours
        ),
    )

    @task
    def record_decision(
        gate: dict[str, Any],
        dag_run: DagRunProtocol | None = None,
        ti: RuntimeTaskInstanceProtocol | None = None,
    ) -> dict[str, Any]:
        from accelbench.airflow.tasks.versions import record_decision as record

        assert dag_run is not None and ti is not None  # Airflow passes the run's context
        return record(gate, ti.xcom_pull(task_ids=APPROVAL_TASK) or {}, dag_run.run_id)

    recorded = record_decision(gate)
    unanswered_regressions(gate) >> approve >> recorded
    return recorded
