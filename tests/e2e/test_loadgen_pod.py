"""The benchmark pod's data path without a cluster: `accelbench-loadgen` as the pod runs it (same env),
against a real vLLM CPU server, raw evidence to a real S3 API (moto on 127.0.0.1), then the ingest
task's library call on the Airflow side. Only the pod itself (scheduling, sidecar, probes) is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import EXECUTION, RawLocation
from accelbench.lake.store import Lake
from accelbench.loadgen.host import HostFacts, host_facts

from tests.support import fork_server
from tests.support.loadgen import DATE, NODE, run_loadgen
from tests.support.paths import REPO
from tests.support.specs import tiny_spec

pytestmark = pytest.mark.vllm


def test_pod_load_generator_writes_raw_to_s3_and_the_worker_ingests_it(
    tiny_model: Path, vllm_python: Path, vllm_server, tmp_path: Path, aws_on_moto
) -> None:
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    plan = LoadPlan(input_len=32, output_len=8, concurrency=(1, 2), prompts_per_level=6, warmups=1, seed=3)
    spec = BenchmarkSpec(server=tiny_spec(tiny_model), load=plan, campaign_id="pod-campaign")
    vllm = vllm_python.parent / "vllm"
    done = run_loadgen(spec, vllm_server, f"s3://{bucket}/lake", tmp_path / "raw", vllm=vllm)
    missing_bucket = run_loadgen(spec, vllm_server, "s3://no-such-bucket/lake", tmp_path / "raw2", vllm=vllm)
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads(done.stdout.strip().splitlines()[-1])["runs"]  # a spec alone: a group of one
    where = RawLocation("cpu", DATE, spec.campaign_id, spec.spec_id)
    assert result["failure"] is None and result["raw"] == f"s3://{bucket}/lake/" + "/".join(where.parts)
    lake = Lake(f"s3://{bucket}/lake")
    assert result["attempt"] == "attempt-1"
    data = ingest_raw(
        lake, where, "manual__2026-11-30", "attempt-1", zone="us-west-2b", capacity_type="on-demand"
    )
    assert data is not None
    runs = lake.read("runs").to_pylist()
    levels = [(r["level_value"], r["status"], r["recheck"]) for r in runs]
    assert levels == [(1.0, "ok", False), (2.0, "ok", False), (1.0, "ok", True)]
    for r in runs:
        assert (r["execution_mode"], r["node"], r["zone"], r["capacity_type"]) == (
            "kubernetes",
            NODE,
            "us-west-2b",
            "on-demand",
        )
        assert r["tokens_agree"] and r["total_output_tokens"] == 6 * 8 and r["date"] == DATE
    assert lake.read("requests").num_rows == 18
    # The lake cannot take the evidence: a failed container (exit 3) whose summary says where it tried
    # to write, and still reports what it measured.
    assert missing_bucket.returncode == 3
    (summary,) = json.loads(missing_bucket.stdout.strip().splitlines()[-1])["runs"]
    assert summary["lake_error"].startswith("could not copy the raw evidence to s3://no-such-bucket/lake")
    assert summary["failure"] is None and len(summary["levels"]) == 3  # and the recheck


def test_the_load_generator_records_its_host(tiny_model: Path, vllm_python: Path, tmp_path: Path) -> None:
    """`accelbench-loadgen` as the pod runs it, against the zero-work server: execution.json has the host."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from accelbench.local.tiny_model import server_spec
    from zero_pipeline import zero_server

    plan = LoadPlan(input_len=16, output_len=4, concurrency=(1,), prompts_per_level=3, warmups=1, seed=2)
    spec = BenchmarkSpec(server=server_spec(tiny_model), load=plan, campaign_id="host-loadgen")
    (tmp_path / "spec.json").write_text(spec.model_dump_json())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELBENCH_")} | fork_server.inherited()
    loadgen = str(REPO / ".venv" / "bin" / "accelbench-loadgen")
    with zero_server() as (url, pid):
        args = ["--spec", str(tmp_path / "spec.json"), "--server-url", url, "--server-pid", str(pid)]
        proc = subprocess.run(
            [loadgen, *args, "--out", str(tmp_path / "out"), "--vllm", str(vllm_python.parent / "vllm")],
            env=env | {"ACCELBENCH_EXECUTION_MODE": "kubernetes"},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    execution = json.loads((tmp_path / "out" / spec.spec_id / EXECUTION).read_text())
    assert execution["execution_mode"] == "kubernetes"
    assert {k: execution[k] for k in HostFacts.__annotations__} == host_facts()
