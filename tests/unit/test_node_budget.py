"""Benchmark pods fit the nodes Karpenter really gives them, checked against Karpenter's published figures.

The reference is shared/reference/karpenter-allocatable-al2023.csv (KARPENTER-ALLOCATABLE.md beside it):
the allocatable CPU, memory and pods of an AL2023 node of each type, from the Karpenter AWS provider's
generated instance-types page. A pod whose requests plus the node's DaemonSets exceed it never schedules.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from accelbench.campaign.plan import plan_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.core.problems import PlanningError
from accelbench.core.server_group import ServerGroup
from accelbench.errors import ConfigError
from accelbench.sizing import karpenter
from accelbench.sizing.daemonsets import extra_requests, node_daemonsets
from accelbench.sizing.fit import loadgen_memory
from accelbench.sizing.model_config import load_model_shape
from accelbench.tiers import load_seed, tier
from kubernetes.client import ApiClient
from kubernetes.utils import parse_quantity

from tests.support.allocatable import DEVICES, mebibytes, millicores, pod_requests, reference
from tests.support.paths import REPO
from tests.support.planning import BUILDS

STORE = str(REPO / "tests" / "data" / "model_configs")
CATALOG = {s.instance_type: s for s in load_seed()}
RUNTIME = {"cpu": "vllm-cpu", "gpu": "vllm-gpu", "neuron": "vllm-neuron"}
SMALL_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


def _plan(instance_type: str, model: str = SMALL_MODEL, **fields: Any):
    runtime = RUNTIME[CATALOG[instance_type].accelerator_type]
    req = CampaignRequest(instance_types=[instance_type], model=model, runtime=runtime, **fields)
    return plan_campaign(
        req, CATALOG, "0.19.1", "c-1", load_shape=lambda m: load_model_shape(m, STORE), builds=BUILDS
    )


def render(kubeconfig: Path, instance_type: str) -> dict[str, Any]:
    """The pod KubernetesPodOperator would create for the planned spec (XCom sidecar included)."""
    from accelbench.airflow.benchmark_pod import BenchmarkPod

    spec = _plan(instance_type).specs[0]
    op = BenchmarkPod(
        task_id="bench",
        group=ServerGroup(specs=(spec,)),
        config_file=str(kubeconfig),
        lake_uri="s3://lake/accelbench",
    )
    return ApiClient().sanitize_for_serialization(op.build_pod_request_obj())


def test_karpenters_allocatable_is_reproduced_for_every_published_type() -> None:
    """Our model of Karpenter gives its published CPU and memory exactly, for all 285 rows of the table."""
    wrong = []
    for name, row in reference().items():
        node = karpenter.allocatable(
            memory_mib=int(row["instance_memory_mib"]),
            vcpu=int(row["instance_cpu"]),
            architecture=row["arch"],
            max_pods=int(row["allocatable_pods"]),
        )
        if (node.cpu_m, node.memory_mib) != (
            millicores(row["allocatable_cpu"]),
            mebibytes(row["allocatable_memory"]),
        ):
            published = f"{row['allocatable_cpu']}/{row['allocatable_memory']}"
            wrong.append(f"{name}: ours {node.cpu_m}m/{node.memory_mib}Mi, Karpenter's {published}")
    assert len(reference()) > 200
    assert wrong == []


def test_the_catalog_carries_each_types_eni_limited_pods_and_ec2_shape() -> None:
    """max_pods (which sets kube-reserved memory) and the EC2 figures equal the published table's."""
    for name, spec in CATALOG.items():
        row = reference()[name]
        assert spec.max_pods == int(row["allocatable_pods"]), name
        assert (spec.vcpu, round(spec.memory_gib * 1024)) == (
            int(row["instance_cpu"]),
            int(row["instance_memory_mib"]),
        )
        assert spec.architecture == row["arch"].replace("amd64", "x86_64"), name


def test_every_planned_pod_fits_its_node_with_the_daemonsets(kubeconfig: Path) -> None:
    """For every catalog type the planner accepts (CPU, GPU, Neuron), the real pod's requests (server sidecar,
    load generator, XCom sidecar) plus the DaemonSets fit under Karpenter's allocatable; CPUs are whole
    cores within what the static CPU manager can hand out; devices within the node's."""
    accepted, refused = [], {}
    for name, spec in sorted(CATALOG.items()):
        try:
            pod = render(kubeconfig, name)
        except PlanningError as exc:
            refused[name] = str(exc)
            continue
        accepted.append(name)
        row = reference()[name]
        requests = pod_requests(pod)
        daemonsets = node_daemonsets(tier(spec.accelerator_type).placement.daemonsets)  # + the device plugin
        cpu_m = requests["cpu"] * 1000 + sum(d.cpu_m for d in daemonsets)
        memory_mib = requests["memory"] / 2**20 + sum(d.memory_mib for d in daemonsets)
        assert cpu_m <= millicores(row["allocatable_cpu"]), f"{name}: {cpu_m}m > {row['allocatable_cpu']}"
        assert memory_mib <= mebibytes(row["allocatable_memory"]), (
            f"{name}: {memory_mib}Mi > {row['allocatable_memory']}"
        )
        containers = {c["name"]: c for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", [])}
        for c in containers.values():
            assert c["resources"]["requests"] == c["resources"]["limits"], (
                f"{name}/{c['name']}: not Guaranteed"
            )
        whole = [
            float(parse_quantity(containers[n]["resources"]["requests"]["cpu"])) for n in ("server", "base")
        ]
        assert all(v == int(v) and v >= 1 for v in whole), f"{name}: {whole} not whole cores"
        reserved = int(row["instance_cpu"]) * 1000 - millicores(row["allocatable_cpu"])
        assert sum(whole) <= int(row["instance_cpu"]) - math.ceil(reserved / 1000), (
            f"{name}: static CPU manager"
        )
        if spec.accelerator_type in DEVICES:
            resource, column = DEVICES[spec.accelerator_type]
            asked = containers["server"]["resources"]["requests"][resource]
            assert int(asked) == spec.accelerator_count <= int(row[column]), name
    # Every CPU type below 4 vCPUs is too small for a pod; an 8 GiB type with a large kube-reserved (many ENI
    # pods) may be short of memory for the model, and says by how much; everything else gets a pod.
    too_small = {n for n, s in CATALOG.items() if s.accelerator_type == "cpu" and s.vcpu < 4}
    assert too_small <= set(refused) and all("too small for a benchmark pod" in refused[n] for n in too_small)
    for name in set(refused) - too_small:
        assert CATALOG[name].memory_gib <= 8 and "short by" in refused[name], refused[name]
    assert len(accepted) >= 75
    assert {CATALOG[n].accelerator_type for n in accepted} == {"cpu", "gpu", "neuron"}


@pytest.mark.parametrize("instance_type", ["c7g.xlarge", "c8g.xlarge"])
def test_a_small_model_plans_on_an_8_gib_graviton(instance_type: str) -> None:
    spec = _plan(instance_type).specs[0].server
    assert CATALOG[instance_type].memory_gib == 8
    assert spec.kv_cache_gib >= 1 and spec.server_cpu == 2
    assert (
        spec.server_memory_mib
        == tier("cpu")
        .node_budget(CATALOG[instance_type], loadgen_memory(_plan(instance_type).specs[0].load))
        .server_memory_mib
    )


def test_an_8_gib_type_with_many_eni_pods_is_refused_for_the_memory_it_reserves() -> None:
    """c9g.xlarge: 118 ENI-limited pods reserve 660 MiB more kube memory than c8g.xlarge's 58."""
    with pytest.raises(PlanningError) as err:
        _plan("c9g.xlarge")
    (problem,) = err.value.problems
    assert re.search(r"short by 0\.\d\d GiB", problem.message), problem.message
    assert "smallest catalog type it fits is c7g.xlarge (8 GiB)" in problem.message


def test_a_model_too_big_names_the_shortfall_and_the_smallest_type_that_fits() -> None:
    with pytest.raises(PlanningError) as err:
        _plan("c8g.xlarge", model="meta-llama/Llama-3.1-8B-Instruct")
    (problem,) = err.value.problems
    short = re.search(r"short by (\d+\.\d\d) GiB", problem.message)
    smallest = re.search(r"smallest catalog type it fits is (\S+) \((\d+) GiB\)", problem.message)
    assert short and smallest, problem.message
    fits = smallest.group(1)
    assert float(short.group(1)) > 0
    _plan(fits, model="meta-llama/Llama-3.1-8B-Instruct")  # it does plan there
    smaller = [
        s for s in CATALOG.values() if s.accelerator_type == "cpu" and s.memory_gib < CATALOG[fits].memory_gib
    ]
    for other in smaller:
        with pytest.raises(PlanningError):
            _plan(other.instance_type, model="meta-llama/Llama-3.1-8B-Instruct")


def test_the_budget_assumes_karpenters_default_kubelet_settings() -> None:
    """The model assumes the ENI-limited max pods and Karpenter's reserves: the EC2NodeClass keeps them."""
    templates = sorted((REPO / "infra" / "karpenter").glob("*-ec2nodeclass.yaml.tftpl"))
    assert {t.name.split("-")[0] for t in templates} >= {"cpu", "gpu", "neuron"}
    for template in templates:
        spec = yaml.safe_load(template.read_text())["spec"]
        assert spec["amiFamily"] == "AL2023", template.name
        assert "kubelet" not in spec, (
            template.name
        )  # no maxPods, kubeReserved, systemReserved or evictionHard
        user_data = spec.get("userData", "")
        assert "maxPods" not in user_data and "Reserved" not in user_data, template.name


def test_the_clusters_own_daemonsets_are_left_room_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """ACCELBENCH_EXTRA_DAEMONSET_REQUESTS: node agents of this cluster beyond the EKS add-ons."""
    before = _plan("r8g.16xlarge").specs[0].server
    monkeypatch.setenv("ACCELBENCH_EXTRA_DAEMONSET_REQUESTS", "cpu=0.7,memory=1Gi")
    after = _plan("r8g.16xlarge").specs[0].server
    assert before.server_memory_mib - after.server_memory_mib == 1024
    assert after.server_cpu == before.server_cpu - 1  # 600m of headroom is not enough for 700m more
    assert extra_requests("cpu=250m, memory=300M") == (250, 287)
    for bad in ("cpu=lots", "memory=1.5Gi", "gpu=1", "cpu"):
        with pytest.raises(ConfigError) as err:
            extra_requests(bad)
        assert "ACCELBENCH_EXTRA_DAEMONSET_REQUESTS" in str(err.value)
