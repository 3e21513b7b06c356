"""The benchmark pod's data path without a cluster: `accelbench-loadgen` as the pod runs it (same env),
against a real vLLM CPU server, raw evidence to a real S3 API (moto on 127.0.0.1), then the ingest
task's library call on the Airflow side. Only the pod itself (scheduling, sidecar, probes) is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import boto3
import pytest
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.execution.local_server import LocalServer
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import RawLocation
from accelbench.lake.store import Lake

from tests.conftest import REPO
from tests.test_local_server import tiny_spec

pytestmark = pytest.mark.vllm
DATE = "2026-11-30"
NODE = "ip-10-0-7-21.us-west-2.compute.internal"


def run_loadgen(  # type: ignore[no-untyped-def]
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


def test_pod_load_generator_writes_raw_to_s3_and_the_worker_ingests_it(
    tiny_model: Path, vllm_python: Path, tmp_path: Path, aws_on_moto
) -> None:  # type: ignore[no-untyped-def]
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    plan = LoadPlan(input_len=32, output_len=8, concurrency=(1, 2), prompts_per_level=6, warmups=1, seed=3)
    spec = BenchmarkSpec(server=tiny_spec(tiny_model), load=plan, campaign_id="pod-campaign")
    with LocalServer(spec.server, tmp_path / "server", python=vllm_python) as server:
        vllm = vllm_python.parent / "vllm"
        done = run_loadgen(spec, server, f"s3://{bucket}/lake", tmp_path / "raw", vllm=vllm)
        missing_bucket = run_loadgen(spec, server, "s3://no-such-bucket/lake", tmp_path / "raw2", vllm=vllm)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    where = RawLocation("cpu", DATE, spec.campaign_id, spec.spec_id)
    assert result["failure"] is None and result["raw"] == f"s3://{bucket}/lake/" + "/".join(where.parts)
    lake = Lake(f"s3://{bucket}/lake")
    assert result["attempt"] == "attempt-1"
    data = ingest_raw(
        lake, where, "manual__2026-11-30", "attempt-1", zone="us-west-2b", capacity_type="on-demand"
    )
    assert data is not None
    runs = lake.read("runs").to_pylist()
    assert [(r["level_value"], r["status"]) for r in runs] == [(1.0, "ok"), (2.0, "ok")]
    for r in runs:
        assert (r["execution_mode"], r["node"], r["zone"], r["capacity_type"]) == (
            "kubernetes",
            NODE,
            "us-west-2b",
            "on-demand",
        )
        assert r["tokens_agree"] and r["total_output_tokens"] == 6 * 8 and r["date"] == DATE
    assert lake.read("requests").num_rows == 12
    # The lake cannot take the evidence: a failed container (exit 3) whose summary says where it tried
    # to write, and still reports what it measured.
    assert missing_bucket.returncode == 3
    summary = json.loads(missing_bucket.stdout.strip().splitlines()[-1])
    assert summary["lake_error"].startswith("could not copy the raw evidence to s3://no-such-bucket/lake")
    assert summary["failure"] is None and len(summary["levels"]) == 2
