"""`accelbench-loadgen` run as the benchmark pod runs it (same environment), without a cluster."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from accelbench.core.spec import BenchmarkSpec
from accelbench.local.server import LocalServer

from tests.support import fork_server
from tests.support.paths import REPO

DATE = "2026-11-30"
NODE = "ip-10-0-7-21.us-west-2.compute.internal"


def run_loadgen(
    spec: BenchmarkSpec,
    server: LocalServer,
    lake: str,
    out: Path,
    *,
    vllm: Path,
    loadgen: Path = REPO / ".venv" / "bin" / "accelbench-loadgen",
    pod_env: dict[str, str] | None = None,
):
    """`accelbench-loadgen` with the pod's environment (`pod_env` adds to or replaces it); `vllm`: the
    `vllm bench serve` executable."""
    env = (
        {k: v for k, v in os.environ.items() if not k.startswith("ACCELBENCH_")}
        | {
            # What the benchmark pod's main container gets (accelbench.k8s.pod.loadgen_env), plus the date
            # the operator adds at run time.
            "ACCELBENCH_BENCHMARK_SPEC": spec.model_dump_json(),
            "ACCELBENCH_SERVER_URL": server.url,
            "ACCELBENCH_EXECUTION_MODE": "kubernetes",
            "ACCELBENCH_NODE_NAME": NODE,
            "ACCELBENCH_LAKE_URI": lake,
            "ACCELBENCH_LAKE_DATE": DATE,
            "ACCELBENCH_RAW_DIR": str(out),
            "ACCELBENCH_ATTEMPT": "attempt-1",
        }
        | (pod_env or {})
        | fork_server.inherited()  # not the pod's: the run's warm runners (another environment's ignore it)
    )
    args = ["--vllm", str(vllm), "--server-pid", str(server.process.pid)]
    return subprocess.run(
        [str(loadgen), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
