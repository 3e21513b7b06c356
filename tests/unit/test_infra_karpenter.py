"""The Karpenter NodePool / EC2NodeClass templates Terraform applies: valid v1 objects that match placement.

The tests render infra/karpenter/*.yaml.tftpl the way Terraform's templatefile() does (plain ${name}
substitution; the templates use no directives; tests/support/infra.py), with the variables
infra/terraform/karpenter.tf passes, then check them against the Karpenter v1.14.1 CRD schemas in
shared/karpenter-crds (strict variants: unknown fields fail) and assert the CEL rules that JSON Schema
cannot evaluate. The tests below are the CPU tier's (render() defaults to it); the GPU and Neuron tiers reuse
the schema and CEL helpers in tests/unit/test_infra_accelerated.py.
"""

from __future__ import annotations

import copy
import dataclasses
import email
from pathlib import Path
from typing import Any

import pytest
import yaml
from accelbench.k8s import placement
from accelbench.tiers import CPU

from tests.support.infra import (
    INFRA,
    INTERPOLATION,
    KARPENTER_TF,
    KINDS,
    REQUIREMENT_KEY,
    TEMPLATE_LABELS,
    TEMPLATES,
    TEST_VALUES,
    allowed_restricted_keys,
    helm_values,
    in_domain,
    template_calls,
    template_inputs,
    terraform_variables,
)
from tests.support.infra import render_karpenter as render
from tests.support.infra import validate_crd as validate


def test_templates_use_exactly_the_variables_terraform_passes() -> None:
    """Every tier's templates: each ${name} is passed by its templatefile() call, from a declared variable."""
    for (tier, kind), path in TEMPLATES.items():
        used = set(INTERPOLATION.findall(path.read_text()))
        assert used == set(template_inputs(kind, tier)), (path.name, used)
        for tf_var in template_inputs(kind, tier).values():
            assert tf_var in terraform_variables(), tf_var
    # The CPU tier's templates are rendered by karpenter.tf, whatever other files render.
    assert {template_calls()["cpu", kind][0] for kind in KINDS} == {KARPENTER_TF}


# ---- schema ----------------------------------------------------------------------------------


RENDERINGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "pinned-ami": {"ami_release": "amazon-eks-node-al2023-arm64-standard-1.33-v20260701"},
    "bigger-limits": {"cpu_limit": 4096, "memory_limit": "32Ti", "consolidate_after": "1h"},
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("rendering", sorted(RENDERINGS))
def test_rendered_manifest_passes_the_strict_crd_schema(kind: str, rendering: str) -> None:
    overrides = {k: v for k, v in RENDERINGS[rendering].items() if k in template_inputs(kind)}
    validate(kind, render(kind, **overrides))


def test_strict_schema_rejects_what_ec2nodeclass_v1_lacks() -> None:
    """The reason for the NodeConfig user data: a cpuManagerPolicy field would be refused."""
    manifest = render("EC2NodeClass")
    manifest["spec"]["kubelet"] = {"cpuManagerPolicy": "static"}
    with pytest.raises(AssertionError, match="cpuManagerPolicy"):
        validate("EC2NodeClass", manifest)


# ---- CEL rules of the CRDs (not evaluated by JSON Schema) ------------------------------------


@pytest.mark.parametrize("tier", ["cpu", "gpu", "neuron"])
def test_nodepool_requirement_keys_and_labels_respect_the_restricted_domains(tier: str) -> None:
    nodepool = render("NodePool", tier)
    keys = {r["key"] for r in nodepool["spec"]["template"]["spec"]["requirements"]}
    labels = set(nodepool["spec"]["template"].get("metadata", {}).get("labels", {}))
    for path, found in ((REQUIREMENT_KEY, keys), (TEMPLATE_LABELS, labels)):
        for domain in ("karpenter.sh", "karpenter.k8s.aws"):
            allowed = allowed_restricted_keys("NodePool", path, domain)
            assert {k for k in found if in_domain(k, domain)} <= allowed, (domain, found)
        assert not found & {placement.NODEPOOL_LABEL, "kubernetes.io/hostname"}, found


def test_nodepool_in_requirements_have_values() -> None:
    for req in render("NodePool")["spec"]["template"]["spec"]["requirements"]:
        if req["operator"] in {"In", "NotIn"}:
            assert req.get("values"), req
        if "minValues" in req:
            assert len(req["values"]) >= req["minValues"], req


def test_ec2nodeclass_has_exactly_one_of_role_and_instance_profile() -> None:
    spec = render("EC2NodeClass")["spec"]
    assert ("role" in spec) != ("instanceProfile" in spec)
    assert spec["role"] == TEST_VALUES["karpenter_node_role_name"]


def test_ec2nodeclass_selects_the_al2023_arm64_ami_by_ssm_parameter() -> None:
    spec = render("EC2NodeClass")["spec"]
    terms = spec["amiSelectorTerms"]
    # CEL rule: amiFamily is required unless an alias term is used; here no alias, so AL2023 is set.
    assert not any("alias" in t for t in terms) and spec["amiFamily"] == "AL2023"
    assert terms == [
        {
            "ssmParameter": "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/"
            "recommended/image_id"
        }
    ]
    pinned = render("EC2NodeClass", ami_release="amazon-eks-node-al2023-arm64-standard-1.33-v20260701")
    assert pinned["spec"]["amiSelectorTerms"][0]["ssmParameter"].endswith(
        "/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.33-v20260701/image_id"
    )


# ---- agreement with accelbench.k8s.placement -------------------------------------------------


def requirement(nodepool: dict[str, Any], key: str) -> dict[str, Any]:
    (req,) = [r for r in nodepool["spec"]["template"]["spec"]["requirements"] if r["key"] == key]
    return req


def test_nodepool_is_the_one_the_benchmark_pods_select() -> None:
    nodepool = render("NodePool")
    assert nodepool["metadata"]["name"] == CPU.placement.nodepool
    ref = nodepool["spec"]["template"]["spec"]["nodeClassRef"]
    assert ref == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": render("EC2NodeClass")["metadata"]["name"],
    }


def test_nodepool_taints_are_placements() -> None:
    taints = render("NodePool")["spec"]["template"]["spec"]["taints"]
    assert taints == [dataclasses.asdict(t) for t in CPU.placement.taints]


def test_nodepool_launches_exactly_the_placement_families_on_arm64() -> None:
    nodepool = render("NodePool")
    families = requirement(nodepool, "karpenter.k8s.aws/instance-family")
    assert families["operator"] == "In"
    assert tuple(families["values"]) == tuple(sorted(CPU.families))
    arch = requirement(nodepool, placement.ARCH_LABEL)
    assert arch == {"key": placement.ARCH_LABEL, "operator": "In", "values": [CPU.placement.architecture]}


def test_nodepool_uses_reserved_and_on_demand_capacity_only() -> None:
    capacity = requirement(render("NodePool"), "karpenter.sh/capacity-type")
    assert capacity["operator"] == "In"
    assert sorted(capacity["values"]) == ["on-demand", "reserved"]


def test_nodepool_consolidates_only_empty_nodes_and_has_limits() -> None:
    spec = render("NodePool")["spec"]
    assert spec["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert (
        spec["disruption"]["consolidateAfter"]
        == terraform_variables()["cpu_nodepool_consolidate_after"]["default"]
    )
    assert set(spec["limits"]) == {"cpu", "memory"}
    bigger = render("NodePool", cpu_limit=4096, memory_limit="32Ti")["spec"]["limits"]
    assert bigger == {"cpu": "4096", "memory": "32Ti"}


# ---- the EC2NodeClass: disk and kubelet ------------------------------------------------------


def test_root_volume_is_500gi_encrypted_gp3() -> None:
    mappings = render("EC2NodeClass")["spec"]["blockDeviceMappings"]
    roots = [m for m in mappings if m.get("rootVolume")]
    assert len(roots) == 1, mappings
    ebs = roots[0]["ebs"]
    assert ebs["volumeSize"] == "500Gi"
    assert ebs["volumeType"] == "gp3"
    assert ebs["encrypted"] is True


def node_configs(user_data: str) -> list[dict[str, Any]]:
    message = email.message_from_string(user_data)
    assert message.is_multipart(), "AL2023 user data must be MIME multipart to merge with Karpenter's"
    return [
        yaml.safe_load(part.get_payload())
        for part in message.walk()
        if part.get_content_type() == "application/node.eks.aws"
    ]


def test_user_data_turns_on_the_static_cpu_manager_through_nodeconfig() -> None:
    spec = render("EC2NodeClass")["spec"]
    (config,) = node_configs(spec["userData"])
    assert config["apiVersion"] == "node.eks.aws/v1alpha1"
    assert config["kind"] == "NodeConfig"
    kubelet = config["spec"]["kubelet"]["config"]
    assert kubelet["cpuManagerPolicy"] == "static"
    # The static policy needs a CPU reservation: Karpenter sets kubeReserved.cpu unless told otherwise,
    # so nothing may zero it.
    for reserved in ("kubeReserved", "systemReserved"):
        assert spec.get("kubelet", {}).get(reserved, {}).get("cpu") not in {"0", "0m", 0}, reserved
        assert kubelet.get(reserved, {}).get("cpu") not in {"0", "0m", 0}, reserved


def test_user_data_parser_would_catch_a_missing_nodeconfig() -> None:
    spec = copy.deepcopy(render("EC2NodeClass")["spec"])
    broken = spec["userData"].replace("application/node.eks.aws", "text/x-shellscript")
    assert node_configs(broken) == []


def test_templates_render_to_what_terraform_loads() -> None:
    """karpenter.tf reads the metadata name back from the NodePool template; it must be the placement name."""
    assert Path(KARPENTER_TF).read_text().count("local.cpu_nodepool.metadata.name") == 1
    assert render("NodePool")["metadata"]["name"] == CPU.placement.nodepool


# ---- the Airflow pool of benchmark tasks, sized to this NodePool ---------------------------------


def test_benchmark_pool_is_sized_so_its_pods_always_fit_the_nodepool() -> None:
    variables = terraform_variables()
    limit = variables["cpu_nodepool_cpu_limit"]["default"]
    biggest = variables["cpu_nodepool_max_node_vcpus"]["default"]
    # No node above `biggest` vCPUs, each benchmark pod takes a whole node: `slots` pods fit under the limit.
    for rendering in ({}, {"cpu_limit": 4096}):
        cpu = requirement(render("NodePool", **rendering), "karpenter.k8s.aws/instance-cpu")
        assert cpu["operator"] == "Lt" and cpu["values"] == [str(biggest + 1)]
    tf = KARPENTER_TF.read_text()
    assert "floor(var.cpu_nodepool_cpu_limit / var.cpu_nodepool_max_node_vcpus)" in tf
    assert "local.benchmark_pool_slots" in (INFRA / "terraform" / "outputs.tf").read_text()
    values = helm_values()
    env = {item["name"]: item["value"] for item in values["env"]}
    slots = int(env["ACCELBENCH_BENCHMARK_POOL_SLOTS"])
    assert slots == limit // biggest >= 1 and slots * biggest <= limit
    # The chart's migration job (every install and upgrade) creates or resizes the pool the DAGs use.
    job = " ".join(values["migrateDatabaseJob"]["args"])
    assert job.startswith("bash -c airflow db migrate &&")
    assert 'airflow pools set "$ACCELBENCH_BENCHMARK_POOL" "$ACCELBENCH_BENCHMARK_POOL_SLOTS"' in job
    assert env["ACCELBENCH_BENCHMARK_POOL"] != "default_pool"
