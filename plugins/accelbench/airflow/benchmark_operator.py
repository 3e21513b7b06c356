"""One BenchmarkSpec, in the execution mode the run asks for: a benchmark pod, or a local vLLM process.

One operator for both modes, so the campaign DAG has one shape; the mode is the run's
`execution_mode` param (default ACCELBENCH_EXECUTION_MODE). Either way the raw evidence ends in the
lake's raw/ area and the ingest task turns it into Parquet. Light to import: the kubernetes client
is loaded only when a pod is run.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from accelbench.airflow.benchmark_xcom import NODE_XCOM, RESULT_XCOM
from accelbench.config import LAKE_SETTING
from accelbench.core.modes import check_mode, default_mode
from accelbench.core.spec import BenchmarkSpec
from accelbench.errors import AccelbenchError, ConfigError

log = logging.getLogger(__name__)


def run_date(dag_run: Any) -> str:
    """The lake's date partition for a DAG run: its logical date, or when it ran (manual runs)."""
    when: datetime = dag_run.logical_date or dag_run.run_after
    return when.strftime("%Y-%m-%d")


class BenchmarkOperator(BaseOperator):
    """Start one server for the spec, drive every level, leave the evidence in the lake's raw/ area."""

    def __init__(
        self,
        *,
        spec: BenchmarkSpec | dict[str, Any],
        lake_uri: str | None = None,
        pod_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.benchmark_spec = spec if isinstance(spec, BenchmarkSpec) else BenchmarkSpec.model_validate(spec)
        self.lake_uri = lake_uri
        self.pod_kwargs = pod_kwargs or {}  # e.g. namespace, kubernetes_conn_id: passed to BenchmarkPod
        self._pod: Any = None

    def execute(self, context: Any) -> Any:
        spec, date, ti = self.benchmark_spec, run_date(context["dag_run"]), context["ti"]
        for key in (NODE_XCOM, RESULT_XCOM):  # so that ingest always finds both keys of this attempt
            ti.xcom_push(key=key, value={})
        attempt = uuid.uuid4().hex  # ingest accepts only the evidence this attempt wrote
        try:
            from accelbench.lake.store import Lake  # pyarrow: too slow to import at DAG parse time

            mode = check_mode(context["params"].get("execution_mode") or default_mode())
            lake = Lake(self.lake_uri) if self.lake_uri else Lake.from_env()
            log.info(
                "benchmark %s on %s, %s mode, attempt %s",
                spec.spec_id,
                spec.server.instance_type,
                mode,
                attempt,
            )
            if mode == "local":
                from accelbench.execution.local import run_local

                result = run_local(spec, lake, date, attempt)
            else:
                if lake.local:
                    raise ConfigError(
                        LAKE_SETTING, lake.uri, "kubernetes mode needs an s3:// lake the pods can write"
                    )
                from accelbench.airflow.benchmark_pod import BenchmarkPod

                self._pod = BenchmarkPod(
                    task_id=self.task_id, spec=spec, lake_uri=lake.uri, **self.pod_kwargs
                )
                result = self._pod.run(context, date, attempt)
        except AccelbenchError as exc:
            raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc
        if result.get("lake_error"):
            raise AirflowFailException(f"benchmark {spec.spec_id}: {result['lake_error']}")
        if result.get("failure"):
            ti.xcom_push(key=RESULT_XCOM, value=result)  # ingest reads the attempt from it
            raise AirflowFailException(
                f"benchmark {spec.spec_id} failed at {result['failure']}; the levels measured before it "
                "are kept and ingested"
            )
        return result

    def on_kill(self) -> None:
        """A killed task deletes its pod (local mode: the server dies with the task process)."""
        if self._pod is not None:
            self._pod.on_kill()
