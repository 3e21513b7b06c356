"""One campaign over CPU, GPU and Neuron types: the runtime follows each type's tier, and every pod it plans
validates strictly and gets a node, checked against Karpenter's published allocatable figures
(shared/reference/karpenter-allocatable-al2023.csv) and the Kubernetes schemas of kubernetes-validate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from accelbench import tiers
from accelbench.campaign.plan import Plan, RuntimeBuild, plan_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.core.problems import PlanningError
from accelbench.core.server_group import ServerGroup
from accelbench.core.spec import TierServerFields
from accelbench.k8s import placement
from accelbench.loadgen.contract import SPEC_ENV
from accelbench.sizing.daemonsets import node_daemonsets
from accelbench.sizing.model_config import load_model_shape
from accelbench.tiers.gpu import GpuServerFields
from accelbench.tiers.neuron import NeuronServerFields
from kubernetes.client import ApiClient

from tests.support.allocatable import DEVICES, mebibytes, millicores, pod_requests, reference
from tests.support.planning import BUILDS, CATALOG, NEURON_BUILD, STORE

K8S_VERSIONS = ["1.33", "1.34", "1.35", "1.36", "1.37"]
MIXED = ["m8g.4xlarge", "g6e.xlarge", "inf2.xlarge"]
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"  # 14 attention heads, 2 KV heads (tests/data/model_configs)
GPU_BUILD = RuntimeBuild("0.11.0", digest="sha256:" + "ab" * 32)


def plan(**fields: Any) -> Plan:
    req = CampaignRequest(**({"instance_types": MIXED, "model": MODEL} | fields))
    builds = {**BUILDS, "vllm-gpu": GPU_BUILD}
    return plan_campaign(
        req, CATALOG, "0.19.1", "c-mixed", lambda m: load_model_shape(m, STORE), builds=builds
    )


def problems(**fields: Any) -> dict[str, str]:
    with pytest.raises(PlanningError) as err:
        plan(**fields)
    return {p.field: f"{p.value!r}: {p.message}" for p in err.value.problems}


def render(kubeconfig: Path, spec: Any) -> dict[str, Any]:
    from accelbench.airflow.benchmark_pod import BenchmarkPod

    op = BenchmarkPod(
        task_id="bench",
        group=ServerGroup(specs=(spec,)),
        config_file=str(kubeconfig),
        lake_uri="s3://lake/accelbench",
    )
    return ApiClient().sanitize_for_serialization(op.build_pod_request_obj())


def test_each_type_runs_its_tiers_runtime_image_and_ranks() -> None:
    assert set(tiers.NEURON.cores_by_family) == tiers.NEURON.families  # each family: NeuronCores per device
    servers = {s.server.instance_type: s.server for s in plan().specs}
    assert list(servers) == MIXED
    cpu, gpu, neuron = (servers[t] for t in MIXED)
    assert (cpu.runtime, cpu.image, cpu.version) == (
        "vllm-cpu",
        "vllm/vllm-openai-cpu:v0.19.1-arm64",
        "0.19.1",
    )
    assert (gpu.runtime, gpu.image, gpu.version) == ("vllm-gpu", "vllm/vllm-openai:v0.11.0", "0.11.0")
    assert gpu.image_digest == GPU_BUILD.digest and cpu.image_digest is None
    assert (neuron.runtime, neuron.image, neuron.version) == ("vllm-neuron", NEURON_BUILD.image, "0.16.0")
    # CPU: one rank per NUMA node; GPU: one per GPU; Neuron: one per NeuronCore (2 per Inferentia2 device).
    assert (cpu.tensor_parallel_size, gpu.tensor_parallel_size, neuron.tensor_parallel_size) == (1, 1, 2)
    assert (
        cpu.dtype == "bfloat16"
        and gpu.tier_fields == GpuServerFields(gpu_memory_utilization=0.9)
        and cpu.tier_fields == TierServerFields()
    )
    # the largest default concurrency level
    assert neuron.tier_fields == NeuronServerFields(max_num_seqs=16)
    assert gpu.kv_cache_gib > 30  # an L40S (44.7 GiB) at 0.9, less 1 GiB of weights and the runtime


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_three_tiers_plan_three_pods_that_validate_strictly(kubeconfig: Path, version: str) -> None:
    for spec in plan().specs:
        kubernetes_validate.validate(render(kubeconfig, spec), version, strict=True)


def test_three_tiers_pods_fit_their_nodes_per_karpenters_published_allocatable(kubeconfig: Path) -> None:
    """Each pod's requests (server sidecar, load generator, XCom sidecar) plus its tier's DaemonSets fit under
    the node's allocatable CPU and memory, and its devices under the node's device count; all three run the
    same load-generator image, on their tier's NodePool, tolerating their tier's taints."""
    loadgen_images = set()
    startup: dict[str, int] = {}
    for spec in plan().specs:
        tier, name = spec.server.accelerator_type, spec.server.instance_type
        pod = render(kubeconfig, spec)
        row = reference()[name]
        requests = pod_requests(pod)
        daemonsets = node_daemonsets(tiers.tier(tier).placement.daemonsets)
        cpu_m = requests["cpu"] * 1000 + sum(d.cpu_m for d in daemonsets)
        memory_mib = requests["memory"] / 2**20 + sum(d.memory_mib for d in daemonsets)
        assert cpu_m <= millicores(row["allocatable_cpu"]), (name, cpu_m, row["allocatable_cpu"])
        assert memory_mib <= mebibytes(row["allocatable_memory"]), (
            name,
            memory_mib,
            row["allocatable_memory"],
        )
        server = pod["spec"]["initContainers"][0]
        asked = server["resources"]["limits"]
        for other, (resource, column) in DEVICES.items():
            if other == tier:
                assert 1 <= int(asked[resource]) == CATALOG[name].accelerator_count <= int(row[column]), name
            else:
                assert resource not in asked, name
        selector = pod["spec"]["nodeSelector"]
        assert selector[placement.NODEPOOL_LABEL] == tiers.tier(tier).placement.nodepool
        assert selector[placement.ARCH_LABEL] == row["arch"]  # arm64 Graviton, amd64 GPU and Neuron
        tolerations = {(t["key"], t["value"], t["effect"]) for t in pod["spec"]["tolerations"]}
        assert tolerations == {(t.key, t.value, t.effect) for t in tiers.tier(tier).placement.taints}
        main = pod["spec"]["containers"][0]
        loadgen_images.add(main["image"])
        (planned,) = json.loads({e["name"]: e for e in main["env"]}[SPEC_ENV]["value"])["specs"]
        assert planned["server"]["runtime"] == spec.server.runtime
        assert server["command"] == ["vllm", "serve"]  # whatever each tier's image's ENTRYPOINT runs
        startup[tier] = server["startupProbe"]["failureThreshold"] * server["startupProbe"]["periodSeconds"]
        args = server["args"]
        assert ("--gpu-memory-utilization" in args) == (tier == "gpu"), name
        assert ("--max-num-seqs" in args) == (tier == "neuron"), name
    assert len(loadgen_images) == 1  # the same pinned load generator against every tier
    # The same model's server may take longer to start where it compiles first: CUDA graphs, neuronx-cc.
    assert startup["cpu"] < startup["gpu"] < startup["neuron"], startup


def test_gpu_ranks_follow_the_models_heads() -> None:
    """Qwen2.5-0.5B's 14 heads do not split over a g6e.12xlarge's 4 GPUs: 2 ranks, said in a warning; a
    rank count that does not split them is refused, naming the one that does."""
    result = plan(instance_types=["g6e.12xlarge"])
    assert result.specs[0].server.tensor_parallel_size == 2
    assert result.specs[0].server.accelerator_count == 4  # the pod still takes the node's GPUs
    assert any("tensor parallel 2 of its 4 GPUs" in w for w in result.warnings)
    found = problems(instance_types=["g6e.12xlarge"], tensor_parallel_size=4)
    assert "14 attention heads (2 KV heads) do not split over 4 ranks; 2 do" in found["tensor_parallel_size"]
    assert plan(instance_types=["g6e.48xlarge"]).specs[0].server.tensor_parallel_size == 2  # not 8


def test_gpu_memory_fit_is_planned_against_gpu_memory_utilization() -> None:
    """Llama-3.1-70B (~131 GiB of bf16 weights) cannot fit one L40S; on p5.48xlarge it does, and a share
    too small for the weights there is refused with the shortfall."""
    found = problems(instance_types=["g6e.xlarge"], model="meta-llama/Llama-3.1-70B-Instruct")
    assert (
        "does not fit" in found["instance_types[0]"]
        and "raise gpu_memory_utilization" in found["instance_types[0]"]
    )
    big = plan(instance_types=["p5.48xlarge"], model="meta-llama/Llama-3.1-70B-Instruct").specs[0].server
    assert big.tensor_parallel_size == 8 and big.tier_fields == GpuServerFields(gpu_memory_utilization=0.9)
    found = problems(
        instance_types=["p5.48xlarge"], model="meta-llama/Llama-3.1-70B-Instruct", gpu_memory_utilization=0.2
    )
    assert "short by" in found["instance_types[0]"], found


def test_neuron_compiles_for_the_largest_concurrency_and_its_kv_cache_must_fit() -> None:
    neuron = plan(instance_types=["inf2.xlarge"], concurrency=[1, 8]).specs[0].server
    assert neuron.tier_fields == NeuronServerFields(max_num_seqs=8)
    found = problems(
        instance_types=["inf2.xlarge"],
        model="meta-llama/Llama-3.1-8B-Instruct",
        concurrency=[1, 64],
        input_len=8000,
        output_len=128,
    )
    assert "64 sequences (--max-num-seqs)" in found["instance_types[0]"]
    assert "lower the largest concurrency" in found["instance_types[0]"]
    found = problems(
        instance_types=["inf2.xlarge"],
        load_mode="search",
        search_variable="request_rate",
        search_lower=1,
        search_upper=8,
        prompts_per_level=1000,
    )
    assert "compiled for a fixed batch" in found["search_variable"]


def test_gpu_knobs_are_refused_while_a_cpu_type_is_in_the_campaign() -> None:
    found = problems(extra_engine_args=["--data-parallel-size=2"])
    assert "(the CPU types of this campaign: m8g.4xlarge)" in found["extra_engine_args[0]"]
    assert plan(instance_types=["g6e.xlarge"], extra_engine_args=["--data-parallel-size=1"]).specs
    found = problems(instance_types=["g6e.xlarge"], extra_engine_args=["--gpu-memory-utilization=0.5"])
    assert "set by the planner from gpu_memory_utilization" in found["extra_engine_args[0]"]
    found = problems(instance_types=["g6e.xlarge"], deployment_mode="distributed")
    assert "multi-node and disaggregated deployments are not built" in found["deployment_mode"]
