"""Every run says where it ran (issue 16): the host's CPU, architecture, vCPUs, kernel and EC2 instance
type, the node's instance-type label and the server's image digest in kubernetes mode; prices apply
only to rows measured on the planned instance type (`measured_on_instance`)."""

from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from accelbench import __version__
from accelbench.campaign.plan import plan_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.core.server_group import ServerGroup
from accelbench.core.spec import BenchmarkSpec
from accelbench.lake.ingest import PROVENANCE_FIELDS, ingest_raw
from accelbench.lake.raw import ENVELOPE, RawLocation, upload_raw, write_execution
from accelbench.lake.store import Lake
from accelbench.loadgen.driver import LevelRecord
from accelbench.loadgen.host import HostFacts, host_facts
from accelbench.sizing.model_config import load_model_shape
from aiohttp import web

from tests.support.gpus import H100S, fake_nvidia_smi
from tests.support.kube_api import NODE, FakeKubeAPI, status
from tests.support.planning import CATALOG, STORE

DATE = "2026-11-30"
DIGEST = "docker.io/vllm/vllm-openai-cpu@sha256:" + "5e" * 32

# /proc/cpuinfo as each machine writes it (the first processor's block, then the next one's start).
XEON_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8488C
stepping\t: 8
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov avx512f amx_bf16

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: something else
"""
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid sve bf16 i8mm
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: {variant}
CPU part\t: {part}
CPU revision\t: 1

processor\t: 1
BogoMIPS\t: 2100.00
CPU implementer\t: 0x41
CPU part\t: 0xfff
"""


def _machine(root: Path, cpuinfo: str | None, dmi: dict[str, str] | None) -> tuple[Path, Path]:
    """A fake /proc and DMI directory (sysfs files end in a newline); None leaves one out."""
    proc, dmi_dir = root / "proc", root / "dmi"
    proc.mkdir(parents=True)
    dmi_dir.mkdir()
    if cpuinfo is not None:
        (proc / "cpuinfo").write_text(cpuinfo)
    for name, value in (dmi or {}).items():
        (dmi_dir / name).write_text(value + "\n")
    return proc, dmi_dir


def _ec2(instance_type: str) -> dict[str, str]:
    return {"sys_vendor": "Amazon EC2", "product_name": instance_type, "bios_vendor": "Amazon EC2"}


@pytest.mark.parametrize(
    ("cpuinfo", "dmi", "model", "instance_type"),
    [
        (XEON_CPUINFO, _ec2("m7i.xlarge"), "Intel(R) Xeon(R) Platinum 8488C", "m7i.xlarge"),
        (
            ARM_CPUINFO.format(variant="0x1", part="0xd40"),
            _ec2("m7g.xlarge"),
            "Arm Neoverse-V1 (AWS Graviton3)",
            "m7g.xlarge",
        ),
        (
            ARM_CPUINFO.format(variant="0x0", part="0xd4f"),
            _ec2("m8g.xlarge"),
            "Arm Neoverse-V2 (AWS Graviton4)",
            "m8g.xlarge",
        ),
        # An Ampere Altra elsewhere is a Neoverse-N1 too, but no Graviton2 and no EC2 instance type.
        (
            ARM_CPUINFO.format(variant="0x3", part="0xd0c"),
            {"sys_vendor": "QEMU", "product_name": "KVM Virtual Machine"},
            "Arm Neoverse-N1",
            None,
        ),
        # A core the table does not know is named by its codes, never guessed.
        (ARM_CPUINFO.format(variant="0x0", part="0xd84"), _ec2("m9g.xlarge"), "Arm part 0xd84", "m9g.xlarge"),
    ],
    ids=["xeon-m7i", "graviton3", "graviton4", "ampere-elsewhere", "unknown-core"],
)
def test_host_facts_from_cpuinfo_and_dmi(
    tmp_path: Path, cpuinfo: str, dmi: dict[str, str], model: str, instance_type: str | None
) -> None:
    facts = host_facts(*_machine(tmp_path, cpuinfo, dmi))
    assert facts["host_cpu_model"] == model
    assert facts["host_instance_type"] == instance_type


def test_without_cpuinfo_or_dmi_the_platform_answers_and_nothing_is_invented(tmp_path: Path) -> None:
    """Not Linux, or a VM without DMI (this one): no instance type, the CPU from platform.processor()."""
    facts = host_facts(*_machine(tmp_path, None, None))
    assert facts["host_instance_type"] is None
    assert facts["host_cpu_model"] == (platform.processor() or None)


def test_host_facts_are_provenance_fields() -> None:
    """What the executors write into execution.json is what the ingest reads from it."""
    assert set(HostFacts.__annotations__) == set(host_facts()) <= set(PROVENANCE_FIELDS)


def test_host_facts_of_this_machine() -> None:
    facts = host_facts()
    machine = platform.machine()
    assert facts["host_architecture"] == {"aarch64": "arm64"}.get(machine, machine)
    assert facts["host_architecture"] in ("arm64", "x86_64")
    assert facts["host_vcpus"] == os.cpu_count() and facts["host_kernel"] == platform.release()
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    named = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    if named:
        assert facts["host_cpu_model"] == named[1].strip()
    elif re.search(r"^CPU implementer\s*:\s*0x41$", cpuinfo, re.M):
        assert facts["host_cpu_model"].startswith("Arm ")
    dmi = Path("/sys/devices/virtual/dmi/id")
    on_ec2 = (dmi / "sys_vendor").is_file() and (dmi / "sys_vendor").read_text().strip() == "Amazon EC2"
    expected = (dmi / "product_name").read_text().strip() if on_ec2 else None
    assert facts["host_instance_type"] == expected
    json.dumps(facts)  # execution.json takes them as they are


# ---- from execution.json and the orchestrator's hints to the rows ---------------------------------


def _planned(instance_type: str = "m8g.xlarge") -> BenchmarkSpec:
    req = CampaignRequest(instance_types=[instance_type], model="local/tiny-llama", dtype="bfloat16")
    return plan_campaign(
        req, CATALOG, "0.32.0", "host-campaign", load_shape=lambda m: load_model_shape(m, STORE)
    ).specs[0]


def _evidence(spec: BenchmarkSpec, spec_dir: Path, **execution: Any) -> None:
    """An envelope as the driver writes it, of one level that failed before it had a result."""
    level = LevelRecord(
        run_id=f"{spec.spec_id}-c1-r1",
        level_kind="concurrency",
        level_value=1.0,
        repeat=0,
        seed=1,
        status="failed",
        error="the server went away",
        started_at=datetime.now(UTC).isoformat(),
    )
    envelope = {
        "spec": spec.model_dump(mode="json"),
        "spec_id": spec.spec_id,
        "attempt": None,
        "server": {},
        "loadgen_version": __version__,
        "levels": [asdict(level)],
        "failure": "the server went away",
    }
    spec_dir.mkdir(parents=True)
    (spec_dir / ENVELOPE).write_text(json.dumps(envelope))
    write_execution(spec_dir, **execution)


def _land(spec: BenchmarkSpec, tmp_path: Path, hints: dict[str, Any], **execution: Any) -> dict[str, Any]:
    lake = Lake(str(tmp_path / "lake"))
    where = RawLocation(spec.server.accelerator_type, DATE, spec.campaign_id, spec.spec_id)
    _evidence(spec, tmp_path / "raw", **execution)
    upload_raw(lake, tmp_path / "raw", where)
    assert ingest_raw(lake, where, "manual__host", **hints) is not None
    (row,) = lake.read("runs").to_pylist()
    return row


def test_a_local_run_on_a_stand_in_host_says_so_on_its_row(tmp_path: Path) -> None:
    spec = _planned("m8g.xlarge")
    here = host_facts()
    image = "vllm==0.32.0 local process from /opt/venv"
    row = _land(spec, tmp_path, {}, execution_mode="local", node="laptop", **here, server_image_id=image)
    assert {k: row[k] for k in here} == here
    assert row["measured_on_instance"] is (here["host_instance_type"] == "m8g.xlarge")
    assert row["server_image_id"] == image
    assert row["image"] == spec.server.image  # the plan stays the plan; server_image_id says what ran


def test_a_local_gpu_run_names_the_gpus_it_ran_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prepared for a g6e.xlarge (one L40S), measured on whatever GPUs this worker has: the row says which,
    and that it was not the planned instance type (so no price applies)."""
    monkeypatch.setenv("PATH", f"{fake_nvidia_smi(tmp_path / 'bin', H100S).parent}:{os.environ['PATH']}")
    spec = _planned("g6e.xlarge")
    here = host_facts()
    assert here["host_accelerators"] == "2 x NVIDIA H100 80GB HBM3 (81559 MiB), driver 570.124.06"
    row = _land(spec, tmp_path, {}, execution_mode="local", node="gpu-box", **here)
    assert row["host_accelerators"] == here["host_accelerators"]
    assert row["measured_on_instance"] is False and row["accelerator_type"] == "gpu"


def test_the_node_label_is_authoritative_over_the_dmi_reading(tmp_path: Path) -> None:
    """The pod's load generator read the node's DMI; the worker's node label overrides it (ingest hints)."""
    spec = _planned("m8g.xlarge")
    dmi = host_facts(
        *_machine(tmp_path / "node", ARM_CPUINFO.format(variant="0x1", part="0xd40"), _ec2("m7g.xlarge"))
    )
    hints = {"host_instance_type": "m8g.xlarge", "server_image_id": DIGEST}
    row = _land(spec, tmp_path, hints, execution_mode="kubernetes", **dmi)
    assert (row["host_instance_type"], row["measured_on_instance"]) == ("m8g.xlarge", True)
    assert row["host_cpu_model"] == "Arm Neoverse-V1 (AWS Graviton3)" and row["server_image_id"] == DIGEST


# ---- kubernetes mode: the node's label and the kubelet's image digest ------------------------------


class KubeletAPI(FakeKubeAPI):
    """The API stand-in with what a kubelet and the cloud provider fill in: the server's image digest in
    its (native sidecar) status, the node's instance-type label; or `get nodes` forbidden."""

    def __init__(self, node_readable: bool = True) -> None:
        super().__init__(mode="run")
        self.node_readable = node_readable

    def _status(self, key: tuple[str, str]) -> dict[str, Any]:
        doc = super()._status(key)
        for state in doc.get("initContainerStatuses", []):
            if state["name"] == "server":
                state["imageID"] = DIGEST
        return doc

    async def _node(self, request: web.Request) -> web.Response:
        self.calls.append((request.method, request.path))
        name = request.match_info["name"]
        if not self.node_readable:
            said = f'nodes "{name}" is forbidden: cannot get resource "nodes" in API group ""'
            return web.json_response(status(403, "Forbidden", said), status=403)
        labels = {
            "topology.kubernetes.io/zone": "us-east-1b",
            "karpenter.sh/capacity-type": "spot",
            "node.kubernetes.io/instance-type": "m8g.xlarge",
            "kubernetes.io/arch": "arm64",
        }
        return web.json_response(
            {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "labels": labels}}
        )


def _node_facts_of_a_created_pod(fake: FakeKubeAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The operator's own facts, from the pod as the API answers for it after creating it."""
    from accelbench.airflow.benchmark_pod import BenchmarkPod

    kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig")
    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(connection))
    group = ServerGroup(specs=(_planned("m8g.xlarge"),))
    op = BenchmarkPod(task_id="bench", group=group, lake_uri="s3://lake-bucket/accelbench")
    pod = op.build_pod_request_obj()
    op.client.create_namespaced_pod(pod.metadata.namespace, pod)
    op.remote_pod = op.client.read_namespaced_pod(pod.metadata.name, pod.metadata.namespace)
    assert fake.rejections == [], fake.rejections
    return op._node_facts()


def test_kubernetes_mode_hints_carry_the_node_label_and_the_image_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with KubeletAPI() as fake:
        facts = _node_facts_of_a_created_pod(fake, tmp_path, monkeypatch)
    assert facts == {
        "node": NODE,
        "zone": "us-east-1b",
        "capacity_type": "spot",
        "host_instance_type": "m8g.xlarge",
        "server_image_id": DIGEST,
    }
    # The ingest of that pod's evidence: the load generator on this (stand-in) machine, the label says
    # it was the planned instance type, so the rows are priced.
    row = _land(
        _planned("m8g.xlarge"), tmp_path, facts, execution_mode="kubernetes", node=NODE, **host_facts()
    )
    assert (row["host_instance_type"], row["measured_on_instance"]) == ("m8g.xlarge", True)
    assert (row["server_image_id"], row["zone"], row["capacity_type"]) == (DIGEST, "us-east-1b", "spot")
    assert row["host_cpu_model"] == host_facts()["host_cpu_model"]


def test_without_get_nodes_the_digest_stays_and_the_dmi_reading_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with KubeletAPI(node_readable=False) as fake:
        facts = _node_facts_of_a_created_pod(fake, tmp_path, monkeypatch)
    assert facts == {"node": NODE, "server_image_id": DIGEST}
    assert "the instance type is the load generator's DMI reading" in caplog.text
    node = host_facts(
        *_machine(tmp_path / "node", ARM_CPUINFO.format(variant="0x0", part="0xd4f"), _ec2("m8g.xlarge"))
    )
    row = _land(_planned("m8g.xlarge"), tmp_path, facts, execution_mode="kubernetes", **node)
    assert (row["host_instance_type"], row["measured_on_instance"]) == ("m8g.xlarge", True)


def test_server_image_id_reads_the_sidecar_status_only() -> None:
    from accelbench.airflow.benchmark_pod import server_image_id
    from kubernetes.client import models as k8s

    def pod(**statuses: list[k8s.V1ContainerStatus]) -> k8s.V1Pod:
        return k8s.V1Pod(status=k8s.V1PodStatus(**statuses))

    def state(name: str, image_id: str) -> k8s.V1ContainerStatus:
        return k8s.V1ContainerStatus(name=name, image_id=image_id, image="x", ready=True, restart_count=0)

    other = state("base", "docker.io/accelbench/loadgen@sha256:" + "0" * 64)
    assert (
        server_image_id(
            pod(container_statuses=[other], init_container_statuses=[state("server", DIGEST)]), "server"
        )
        == DIGEST
    )
    assert server_image_id(pod(container_statuses=[other]), "server") is None
    assert (
        server_image_id(pod(init_container_statuses=[state("server", "")]), "server") is None
    )  # not pulled yet
    assert server_image_id(k8s.V1Pod(), "server") is None


# ---- the real executors write them --------------------------------------------------------------


# The real executors write them: the local executor's on the real local campaign
# (tests/e2e/test_campaign_dag.py), the load generator's in tests/e2e/test_loadgen_pod.py.
