"""What an executor is: a way to run one BenchmarkSpec in one execution mode (core.modes).

Both implementations, `local` (local.executor.LocalExecutor: a vLLM child process) and `kubernetes`
(airflow.benchmark_pod.KubernetesExecutor: a benchmark pod), run the spec, leave the raw evidence in the
lake's raw/ area through the same finish path (loadgen.finish) and return the same typed summary; the
benchmark task looks its executor up by mode (airflow.benchmark_operator.EXECUTORS).
"""

from __future__ import annotations

from typing import Protocol

from accelbench.core.evidence import RunSummary
from accelbench.core.modes import ExecutionMode
from accelbench.core.spec import BenchmarkSpec


class Executor(Protocol):
    mode: ExecutionMode

    def run(self, spec: BenchmarkSpec, date: str, attempt: str) -> RunSummary:
        """Start a server for `spec`, drive every level, copy the evidence to the lake (raw/, partition
        `date`), stop the server. `attempt` goes into the envelope: ingest accepts only its own attempt.

        A failed level sets the summary's `failure`, a lake that refused the evidence its `lake_error`;
        a server that never started, or an executor that never heard back, raises."""
        ...

    def on_kill(self) -> None:
        """The task is being killed: stop what runs the spec (the pod; a local server dies with the task)."""
        ...
