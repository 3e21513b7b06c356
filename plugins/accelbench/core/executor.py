"""What an executor is: a way to run one server and its workloads (core.server_group.ServerGroup) in one
execution mode (core.modes).

Both implementations, `local` (local.executor.LocalExecutor: a vLLM child process) and `kubernetes`
(airflow.benchmark_pod.KubernetesExecutor: a benchmark pod), start the group's server once, run each
workload's spec on it in turn, leave each spec's raw evidence in the lake's raw/ area through the same
finish path (loadgen.finish) and return the same typed summary; the benchmark task looks its executor up by
mode (airflow.benchmark_operator.EXECUTORS).
"""

from __future__ import annotations

from typing import Protocol

from accelbench.core.evidence import GroupSummary
from accelbench.core.modes import ExecutionMode
from accelbench.core.server_group import ServerGroup


class Executor(Protocol):
    mode: ExecutionMode

    def run(self, group: ServerGroup, date: str, attempt: str) -> GroupSummary:
        """Start the group's server, drive each workload's levels in turn, copy each one's evidence to the
        lake (raw/, partition `date`), stop the server. `attempt` goes into the envelopes: ingest accepts only
        the attempt each spec's summary names (a spec an earlier attempt left complete keeps that one's).

        A failed level sets its spec's `failure`, a lake that refused the evidence its `lake_error`, a server
        that died before the last workload the group's `stopped`; a server that never started, or an
        executor that never heard back, raises."""
        ...

    def on_kill(self) -> None:
        """The task is being killed: stop what runs the group (the pod; a local server dies with the task)."""
        ...
