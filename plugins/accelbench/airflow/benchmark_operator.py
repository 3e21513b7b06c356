"""One server group (a configuration's server and its workloads, `core.server_group`), in the execution mode
the run asks for: a benchmark pod, or a local vLLM process.

One operator for both modes, so the campaign DAG has one shape; the mode is the run's
`execution_mode` param (default ACCELBENCH_EXECUTION_MODE). Either way the raw evidence ends in the
lake's raw/ area and the ingest task turns it into Parquet. Light to import: the kubernetes client
is loaded only when a pod is run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from accelbench.airflow.benchmark_xcom import NODE_XCOM, RESULT_XCOM
from accelbench.core.executor import Executor
from accelbench.core.modes import check_mode, default_mode
from accelbench.core.server_group import ServerGroup
from accelbench.errors import AccelbenchError

if TYPE_CHECKING:
    from accelbench.lake.store import Lake

log = logging.getLogger(__name__)


# The executor of each mode, imported when a benchmark runs: the local one needs pyarrow and psutil, the
# kubernetes one the kubernetes client (seconds to import), neither wanted at DAG parse time.
def _local(operator: BenchmarkOperator, context: Any, lake: Lake) -> Executor:
    from accelbench.local.executor import LocalExecutor

    return LocalExecutor(lake)


def _kubernetes(operator: BenchmarkOperator, context: Any, lake: Lake) -> Executor:
    from accelbench.airflow.benchmark_pod import KubernetesExecutor

    return KubernetesExecutor(lake, context, operator.task_id, **operator.pod_kwargs)


# One per execution mode (core.modes.MODES), looked up by the run's mode.
EXECUTORS: dict[str, Callable[[BenchmarkOperator, Any, Lake], Executor]] = {
    "local": _local,
    "kubernetes": _kubernetes,
}


def run_date(dag_run: Any) -> str:
    """The lake's date partition for a DAG run: its logical date, or when it ran (manual runs)."""
    when: datetime = dag_run.logical_date or dag_run.run_after
    return when.strftime("%Y-%m-%d")


class BenchmarkOperator(BaseOperator):
    """Start one server for the group, drive each workload's levels on it in turn, leave each one's evidence
    in the lake's raw/ area."""

    def __init__(
        self,
        *,
        group: ServerGroup | dict[str, Any],
        lake_uri: str | None = None,
        pod_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.benchmark_group = group if isinstance(group, ServerGroup) else ServerGroup.model_validate(group)
        self.lake_uri = lake_uri
        self.pod_kwargs = pod_kwargs or {}  # e.g. namespace, kubernetes_conn_id: passed to BenchmarkPod
        self._executor: Executor | None = None

    def execute(self, context: Any) -> Any:
        group, date, ti = self.benchmark_group, run_date(context["dag_run"]), context["ti"]
        for key in (NODE_XCOM, RESULT_XCOM):  # so that ingest always finds both keys of this attempt
            ti.xcom_push(key=key, value={})
        attempt = uuid.uuid4().hex  # ingest accepts only the evidence this attempt wrote
        try:
            from accelbench.lake.store import Lake  # pyarrow: too slow to import at DAG parse time

            mode = check_mode(context["params"].get("execution_mode") or default_mode())
            lake = Lake(self.lake_uri) if self.lake_uri else Lake.from_env()
            log.info(
                "benchmark %s on %s, %s mode, attempt %s: one server, %d workload(s): %s",
                group.group_id,
                group.server.instance_type,
                mode,
                attempt,
                len(group.specs),
                group.workloads(),
            )
            self._executor = EXECUTORS[mode](self, context, lake)
            result = self._executor.run(group, date, attempt)
        except AccelbenchError as exc:
            raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc
        # Both modes alike: a lake that refused the evidence fails the task without retry (a retry would
        # measure again over the evidence kept); ingest then finds no evidence of this attempt.
        if errors := result.lake_errors:
            ti.xcom_push(key=RESULT_XCOM, value=result.model_dump(mode="json"))
            raise AirflowFailException(f"benchmark {group.group_id}: " + "; ".join(errors))
        value = result.model_dump(mode="json")  # the XCom value: the typed summary as JSON
        for run in result.runs:
            if run.drift:  # measured and landed, but not the server's figures: the report says undecided
                log.warning("benchmark %s: %s; its figures are reported undecided", run.spec_id, run.drift)
        if failures := result.failures:
            ti.xcom_push(key=RESULT_XCOM, value=value)  # ingest reads each spec's attempt from it
            raise AirflowFailException(
                f"benchmark {group.group_id} failed: {'; '.join(failures)}; the levels and workloads "
                "measured before are kept and ingested"
            )
        return value

    def on_kill(self) -> None:
        """A killed task stops its executor's work (the pod is deleted; a local server dies with the task)."""
        if self._executor is not None:
            self._executor.on_kill()
