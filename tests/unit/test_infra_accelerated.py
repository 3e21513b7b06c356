"""The GPU and Neuron tiers' infrastructure: Karpenter NodePools / EC2NodeClasses and their device plugins.

Outside references: the Karpenter v1.14.1 CRD schemas (shared/karpenter-crds; strict variants reject unknown
fields; the CEL rules JSON Schema cannot evaluate are asserted here), Karpenter's published allocatable table
(shared/reference/karpenter-allocatable-al2023.csv: which types carry how many devices), the Kubernetes
1.33-1.37 schemas of kubernetes-validate (strict), and the upstream device-plugin manifests cited in each
manifest's header.
Names, families and taints come from accelbench.k8s.placement, the device resource from the pod builder, and
the device plugins' requests from accelbench.sizing.daemonsets: the infrastructure must agree with all three.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import kubernetes_validate
import pytest
from accelbench import tiers
from accelbench.catalog.seed_file import InstanceSpec
from accelbench.k8s import placement
from accelbench.sizing import daemonsets
from accelbench.tiers import load_seed
from accelbench.tiers.base import Taint
from kubernetes.utils import parse_quantity

from tests.support.allocatable import reference
from tests.support.infra import (
    DEVICE_PLUGINS,
    INFRA,
    KINDS,
    TEMPLATES,
    TEST_VALUES,
    device_plugin_objects,
    render_karpenter,
    template_inputs,
    terraform_variables,
    validate_crd,
)

ACCELERATED = ("gpu", "neuron")
POOLS = {t.name: t.placement.nodepool for t in tiers.all_tiers()}
FAMILIES = {name: tuple(sorted(tiers.tier(name).families)) for name in ACCELERATED}
TAINTS = {t.name: t.placement.taints for t in tiers.all_tiers()}
K8S_VERSIONS = ("1.33", "1.34", "1.35", "1.36", "1.37")
# Outside facts: the AMI types of the EKS-optimised AL2023 accelerated AMIs as their SSM path names them
# (Amazon EKS User Guide, "Retrieve recommended Amazon Linux AMI IDs"); the column of Karpenter's table for
# each device; the resource each upstream plugin image registers by default (NVIDIA k8s-device-plugin README,
# Neuron "Kubernetes environment setup" tutorial); EC2's architecture names as kubernetes.io/arch spells them.
AMI_TYPE = {"gpu": "amazon-linux-2023/x86_64/nvidia", "neuron": "amazon-linux-2023/x86_64/neuron"}
DEVICE_COLUMN = {"gpu": "allocatable_nvidia_gpu", "neuron": "allocatable_neuron"}
UPSTREAM_RESOURCE = {
    "nvcr.io/nvidia/k8s-device-plugin": "nvidia.com/gpu",
    "public.ecr.aws/neuron/neuron-device-plugin": "aws.amazon.com/neuron",
}
K8S_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
# The kubelet's device-plugin directory: a plugin registers through kubelet.sock there, beside its own socket.
KUBELET_DEVICE_PLUGINS = "/var/lib/kubelet/device-plugins"
# The Neuron chart's ClusterRole rules (aws-neuron/neuron-helm-charts, chart 1.8.0, commit
# cea92c38888e5305558ab61b534c0131024a429c, templates/device-plugin/device-plugin-rbac.yaml): ours grants no
# more.
NEURON_CHART_RULES = {
    ("nodes", "get"),
    ("nodes", "list"),
    ("nodes", "watch"),
    ("events", "create"),
    ("events", "patch"),
    ("pods", "update"),
    ("pods", "patch"),
    ("pods", "get"),
    ("pods", "list"),
    ("pods", "watch"),
    ("nodes/status", "patch"),
    ("nodes/status", "update"),
    ("nodes/proxy", "get"),
    ("nodes/proxy", "list"),
}


def device_resource(tier: str) -> str:
    """The extended resource a benchmark pod of the tier requests (the pod builder's)."""
    name = tiers.tier(tier).placement.device_resource
    assert name, tier
    return name


def device_limit_input(tier: str) -> str:
    """The template variable of the NodePool's limit on the pods' device resource."""
    text = TEMPLATES[tier, "NodePool"].read_text()
    (name,) = re.findall(rf'^\s+{re.escape(device_resource(tier))}: "\$\{{(\w+)\}}"$', text, re.M)
    return name


def renderings(tier: str) -> dict[str, dict[str, Any]]:
    """Several ways Terraform may render the tier's templates: defaults, a pinned AMI, other limits."""
    variant = AMI_TYPE[tier].rsplit("/", 1)[1]
    limit = device_limit_input(tier)
    return {
        "defaults": {},
        "pinned-ami": {
            "ami_release": f"amazon-eks-node-al2023-x86_64-{variant}-1.36-v20260827",
            "kubernetes_version": "1.36",
        },
        "bigger-limits": {"cpu_limit": 4096, "memory_limit": "32Ti", limit: 256, "consolidate_after": "1h"},
    }


def render(kind: str, tier: str, rendering: str = "defaults") -> dict[str, Any]:
    overrides = {k: v for k, v in renderings(tier)[rendering].items() if k in template_inputs(kind, tier)}
    return render_karpenter(kind, tier, **overrides)


def requirement(nodepool: dict[str, Any], key: str) -> dict[str, Any]:
    (req,) = [r for r in nodepool["spec"]["template"]["spec"]["requirements"] if r["key"] == key]
    return req


def catalog_types(tier: str) -> list[InstanceSpec]:
    types = [spec for spec in load_seed() if spec.accelerator_type == tier]
    assert types, f"the catalog seed has no {tier} type"
    return types


# ---- the Karpenter objects: CRD schema and CEL rules -------------------------------------------


@pytest.mark.parametrize("tier", ACCELERATED)
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("rendering", ["defaults", "pinned-ami", "bigger-limits"])
def test_rendered_manifest_passes_the_strict_crd_schema(tier: str, kind: str, rendering: str) -> None:
    validate_crd(kind, render(kind, tier, rendering))


@pytest.mark.parametrize("tier", ACCELERATED)
def test_the_device_limit_is_a_quantity_the_schema_checks(tier: str) -> None:
    """NodePool limits is a ResourceList: the device key is accepted, a malformed quantity is not."""
    nodepool = render("NodePool", tier)
    assert device_resource(tier) in nodepool["spec"]["limits"]
    nodepool["spec"]["limits"][device_resource(tier)] = "eight"
    with pytest.raises(AssertionError, match="limits"):
        validate_crd("NodePool", nodepool)


@pytest.mark.parametrize("tier", ACCELERATED)
def test_ec2nodeclass_has_exactly_one_of_role_and_instance_profile(tier: str) -> None:
    spec = render("EC2NodeClass", tier)["spec"]
    assert ("role" in spec) != ("instanceProfile" in spec)
    assert spec["role"] == TEST_VALUES["karpenter_node_role_name"]


@pytest.mark.parametrize("tier", ACCELERATED)
def test_nodepool_in_requirements_have_values(tier: str) -> None:
    for req in render("NodePool", tier)["spec"]["template"]["spec"]["requirements"]:
        if req["operator"] in {"In", "NotIn"}:
            assert req.get("values"), req
        if "minValues" in req:
            assert len(req["values"]) >= req["minValues"], req


# ---- the EC2NodeClass: the accelerated AMI, disk, IMDS -------------------------------------------


@pytest.mark.parametrize("tier", ACCELERATED)
def test_ec2nodeclass_selects_the_accelerated_al2023_ami_by_ssm_parameter(tier: str) -> None:
    spec = render("EC2NodeClass", tier)["spec"]
    # CEL rule: amiFamily is required unless an alias term is used; here no alias, so AL2023 is set.
    (term,) = spec["amiSelectorTerms"]
    assert set(term) == {"ssmParameter"} and spec["amiFamily"] == "AL2023"
    k8s = terraform_variables()["kubernetes_version"]["default"]
    assert (
        term["ssmParameter"] == f"/aws/service/eks/optimized-ami/{k8s}/{AMI_TYPE[tier]}/recommended/image_id"
    )
    pinned = render("EC2NodeClass", tier, "pinned-ami")["spec"]["amiSelectorTerms"][0]["ssmParameter"]
    release = renderings(tier)["pinned-ami"]["ami_release"]
    assert pinned == f"/aws/service/eks/optimized-ami/1.36/{AMI_TYPE[tier]}/{release}/image_id"
    # The AMI's architecture is the NodePool's.
    arch = requirement(render("NodePool", tier), placement.ARCH_LABEL)
    assert arch["operator"] == "In" and arch["values"] == [K8S_ARCH[AMI_TYPE[tier].split("/")[1]]]


def _hcl_regex(variable: str) -> re.Pattern[str]:
    condition = terraform_variables()[variable]["validation"][0]["condition"]
    (pattern,) = re.findall(r'regex\("(.*)", var\.', condition)
    return re.compile(pattern.replace("\\\\", "\\"))


@pytest.mark.parametrize("tier", ACCELERATED)
def test_ami_release_variable_accepts_its_own_variant_only(tier: str) -> None:
    """The validation admits 'recommended' and the tier's release names, not the other AMI types'."""
    variable = template_inputs("EC2NodeClass", tier)["ami_release"]
    pattern = _hcl_regex(variable)
    assert terraform_variables()[variable]["default"] == "recommended"
    description = terraform_variables()[variable]["description"]
    (example,) = re.findall(r"amazon-eks-node-al2023-[\w.-]+-v\d{8}", description)
    for ok in ("recommended", example, renderings(tier)["pinned-ami"]["ami_release"]):
        assert pattern.fullmatch(ok), ok
    others = [t.rsplit("/", 1)[1] for other, t in AMI_TYPE.items() if other != tier] + ["standard"]
    for variant in others:
        assert not pattern.fullmatch(f"amazon-eks-node-al2023-x86_64-{variant}-1.36-v20260827"), variant


@pytest.mark.parametrize("tier", ACCELERATED)
def test_ec2nodeclass_is_imdsv2_only_like_the_cpu_class(tier: str) -> None:
    spec = render("EC2NodeClass", tier)["spec"]
    assert spec["metadataOptions"]["httpTokens"] == "required"
    assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert spec["metadataOptions"] == render_karpenter("EC2NodeClass")["spec"]["metadataOptions"]
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": TEST_VALUES["cluster_name"]}}]
    assert spec["securityGroupSelectorTerms"] == spec["subnetSelectorTerms"]


def _gib(quantity: str) -> float:
    return float(parse_quantity(quantity)) / 2**30


@pytest.mark.parametrize("tier", ACCELERATED)
def test_root_volume_is_encrypted_gp3_and_at_least_the_cpu_classs(tier: str) -> None:
    """Accelerated vLLM images and weights are larger than the CPU tier's: never a smaller disk."""
    mappings = render("EC2NodeClass", tier)["spec"]["blockDeviceMappings"]
    roots = [m for m in mappings if m.get("rootVolume")]
    assert len(roots) == 1, mappings
    ebs = roots[0]["ebs"]
    assert ebs["volumeType"] == "gp3" and ebs["encrypted"] is True and ebs["deleteOnTermination"] is True
    (cpu_root,) = [
        m for m in render_karpenter("EC2NodeClass")["spec"]["blockDeviceMappings"] if m.get("rootVolume")
    ]
    assert _gib(ebs["volumeSize"]) >= _gib(cpu_root["ebs"]["volumeSize"]) >= 500
    # gp3: at most 16,000 IOPS and 1,000 MiB/s, and throughput at most IOPS / 4.
    assert ebs["iops"] <= 16000 and ebs["throughput"] <= min(1000, ebs["iops"] / 4)


@pytest.mark.parametrize("tier", ACCELERATED)
def test_ec2nodeclass_keeps_karpenters_default_kubelet_settings(tier: str) -> None:
    """The allocatable of Karpenter's table (the node budget's reference) assumes no kubelet overrides."""
    spec = render("EC2NodeClass", tier)["spec"]
    assert "kubelet" not in spec and "userData" not in spec


# ---- agreement with placement --------------------------------------------------------------------


@pytest.mark.parametrize("tier", ACCELERATED)
def test_nodepool_is_the_one_the_benchmark_pods_select(tier: str) -> None:
    nodepool = render("NodePool", tier)
    assert nodepool["metadata"]["name"] == POOLS[tier]
    ref = nodepool["spec"]["template"]["spec"]["nodeClassRef"]
    nodeclass = render("EC2NodeClass", tier)
    assert ref == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": nodeclass["metadata"]["name"],
    }
    assert nodeclass["spec"]["tags"]["accelbench.io/nodepool"] == POOLS[tier]


@pytest.mark.parametrize("tier", ACCELERATED)
def test_nodepool_taints_are_placements(tier: str) -> None:
    taints = render("NodePool", tier)["spec"]["template"]["spec"]["taints"]
    assert taints == [dataclasses.asdict(t) for t in TAINTS[tier]]


@pytest.mark.parametrize("tier", ACCELERATED)
def test_nodepool_launches_exactly_the_placement_families(tier: str) -> None:
    families = requirement(render("NodePool", tier), "karpenter.k8s.aws/instance-family")
    assert families["operator"] == "In"
    assert tuple(families["values"]) == FAMILIES[tier]


@pytest.mark.parametrize("tier", ACCELERATED)
def test_nodepool_uses_reserved_and_on_demand_capacity_only(tier: str) -> None:
    capacity = requirement(render("NodePool", tier), "karpenter.sh/capacity-type")
    assert capacity["operator"] == "In"
    assert sorted(capacity["values"]) == ["on-demand", "reserved"]


@pytest.mark.parametrize("tier", ACCELERATED)
def test_nodepool_consolidates_only_empty_nodes_and_caps_devices(tier: str) -> None:
    spec = render("NodePool", tier)["spec"]
    assert spec["disruption"]["consolidationPolicy"] == "WhenEmpty"
    consolidate = template_inputs("NodePool", tier)["consolidate_after"]
    assert spec["disruption"]["consolidateAfter"] == terraform_variables()[consolidate]["default"]
    assert set(spec["limits"]) == {"cpu", "memory", device_resource(tier)}
    bigger = render("NodePool", tier, "bigger-limits")["spec"]["limits"]
    assert bigger == {"cpu": "4096", "memory": "32Ti", device_resource(tier): "256"}


def _satisfies(req: dict[str, Any], labels: dict[str, str]) -> bool:
    """Kubernetes node-selector semantics of one requirement against known labels."""
    value, values = labels.get(req["key"]), req.get("values", [])
    match req["operator"]:
        case "In":
            return value in values
        case "NotIn":
            return value not in values
        case "Exists":
            return value is not None
        case "DoesNotExist":
            return value is None
        case "Gt":
            return value is not None and int(value) > int(values[0])
        case "Lt":
            return value is not None and int(value) < int(values[0])
    raise AssertionError(req)


def _labels(spec: InstanceSpec) -> dict[str, str]:
    return {
        "karpenter.k8s.aws/instance-family": spec.family,
        "karpenter.k8s.aws/instance-cpu": str(spec.vcpu),
        "node.kubernetes.io/instance-type": spec.instance_type,
        placement.ARCH_LABEL: K8S_ARCH[spec.architecture],
        "kubernetes.io/os": "linux",
    }


def test_the_requirement_check_would_refuse_a_type() -> None:
    assert not _satisfies(
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["8"]},
        {"karpenter.k8s.aws/instance-cpu": "192"},
    )
    assert not _satisfies(
        {"key": placement.ARCH_LABEL, "operator": "In", "values": ["amd64"]}, {placement.ARCH_LABEL: "arm64"}
    )


@pytest.mark.parametrize("tier", ACCELERATED)
def test_every_catalog_type_of_the_tier_gets_a_node_with_its_devices(tier: str) -> None:
    """The NodePool can launch each type the catalog plans (every requirement whose label is known), and
    Karpenter's table gives that type at least the devices the catalog counts."""
    nodepool = render("NodePool", tier)
    known = set(_labels(catalog_types(tier)[0]))
    requirements = [r for r in nodepool["spec"]["template"]["spec"]["requirements"] if r["key"] in known]
    assert {r["key"] for r in requirements} >= {"karpenter.k8s.aws/instance-family", placement.ARCH_LABEL}
    table = reference()
    for spec in catalog_types(tier):
        for req in requirements:
            assert _satisfies(req, _labels(spec)), (spec.instance_type, req)
        row = table.get(spec.instance_type)
        assert row, f"{spec.instance_type} is not in Karpenter's table"
        assert row["arch"] == K8S_ARCH[spec.architecture], spec.instance_type
        devices = row[DEVICE_COLUMN[tier]]
        assert devices and int(devices) >= spec.accelerator_count >= 1, (spec.instance_type, devices)


@pytest.mark.parametrize("tier", ACCELERATED)
def test_every_nodepool_family_has_types_with_the_device_in_karpenters_table(tier: str) -> None:
    """No family in the pool whose nodes would come up without the tier's device."""
    table = reference()
    for family in FAMILIES[tier]:
        rows = [r for name, r in table.items() if name.split(".", 1)[0] == family]
        assert rows, f"{family} is not in Karpenter's table"
        assert all(r[DEVICE_COLUMN[tier]] and int(r[DEVICE_COLUMN[tier]]) >= 1 for r in rows), family


@pytest.mark.parametrize("tier", ACCELERATED)
def test_default_limits_admit_a_node_of_every_catalog_type(tier: str) -> None:
    """A spending cap below one node of a planned type would leave its benchmark pods pending forever."""
    limits = render("NodePool", tier)["spec"]["limits"]
    for spec in catalog_types(tier):
        row = reference()[spec.instance_type]
        assert int(limits["cpu"]) >= spec.vcpu, spec.instance_type
        assert float(parse_quantity(limits["memory"])) >= int(row["instance_memory_mib"]) * 2**20, (
            spec.instance_type
        )
        assert int(limits[device_resource(tier)]) >= spec.accelerator_count, spec.instance_type


# ---- the device plugins ---------------------------------------------------------------------------


def daemonset(tier: str) -> dict[str, Any]:
    (ds,) = [o for o in device_plugin_objects(tier) if o["kind"] == "DaemonSet"]
    return ds


def tolerates(toleration: dict[str, Any], taint: Taint) -> bool:
    """Kubernetes' ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    if not toleration.get("key"):
        return toleration.get("operator") == "Exists"
    if toleration["key"] != taint.key:
        return False
    return toleration.get("operator", "Equal") == "Exists" or toleration.get("value") == taint.value


def lands_on(ds: dict[str, Any], tier: str) -> bool:
    """Whether the DaemonSet's pods can run on a node of the tier's NodePool (its label and taints)."""
    pod = ds["spec"]["template"]["spec"]
    node_labels = {placement.NODEPOOL_LABEL: POOLS[tier]}
    selector = pod.get("nodeSelector", {})
    if any(node_labels.get(k, v) != v for k, v in selector.items() if k == placement.NODEPOOL_LABEL):
        return False
    tolerations = pod.get("tolerations", [])
    return all(any(tolerates(t, taint) for t in tolerations) for taint in TAINTS[tier])


@pytest.mark.parametrize("tier", ACCELERATED)
@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_device_plugin_objects_validate_strictly_against_kubernetes(tier: str, version: str) -> None:
    for obj in device_plugin_objects(tier):
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{DEVICE_PLUGINS[tier].name} {obj['kind']} on {version}: {exc}")


@pytest.mark.parametrize("tier", ACCELERATED)
def test_device_plugin_tolerates_exactly_its_pools_taints(tier: str) -> None:
    tolerations = daemonset(tier)["spec"]["template"]["spec"]["tolerations"]
    assert {(t["key"], t["operator"], t.get("value"), t["effect"]) for t in tolerations} == {
        (t.key, "Equal", t.value, t.effect) for t in TAINTS[tier]
    }
    cpu_only = [t for t in tiers.CPU.placement.taints if t.key == "accelbench.io/cpu"]
    assert cpu_only, "the CPU tier lost its pool's own taint"
    for other in ("cpu", *ACCELERATED):
        own = [t for t in TAINTS[other] if t not in TAINTS[tier]]  # the taints that tell the pools apart
        if other != tier:
            assert own and not any(tolerates(tol, t) for tol in tolerations for t in own), (tier, other)
    assert not any(tolerates(tol, cpu_only[0]) for tol in tolerations)


def test_the_toleration_check_would_catch_a_blanket_toleration() -> None:
    blanket = {"operator": "Exists"}
    assert all(tolerates(blanket, t) for t in tiers.CPU.placement.taints)
    ds = {"spec": {"template": {"spec": {"tolerations": [blanket]}}}}
    assert lands_on(ds, "cpu")


@pytest.mark.parametrize("tier", ACCELERATED)
def test_device_plugin_runs_on_its_pool_and_nowhere_else(tier: str) -> None:
    ds = daemonset(tier)
    pod = ds["spec"]["template"]["spec"]
    assert pod["nodeSelector"][placement.NODEPOOL_LABEL] == render("NodePool", tier)["metadata"]["name"]
    assert [t for t in POOLS if lands_on(ds, t)] == [tier]
    assert not pod.get("affinity"), "the pool selector is the whole placement"
    assert ds["metadata"]["namespace"] == "kube-system"
    assert pod.get("priorityClassName") == "system-node-critical"


@pytest.mark.parametrize("tier", ACCELERATED)
def test_device_plugin_advertises_what_the_benchmark_pods_request(tier: str) -> None:
    ds = daemonset(tier)
    resource = ds["metadata"]["annotations"]["accelbench.io/device-resource"]
    assert resource == device_resource(tier)
    assert resource in render("NodePool", tier)["spec"]["limits"]
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    repository, _, tag = container["image"].rpartition(":")
    assert UPSTREAM_RESOURCE[repository] == resource
    assert tag and tag != "latest" and "@" not in repository, container["image"]
    # Nothing renames the resource (the NVIDIA plugin's config file, a Neuron resource-name flag).
    assert not container.get("args") and not container.get("command"), container
    # The plugin registers through the kubelet's device-plugin directory.
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    host = {
        v["name"]: v["hostPath"]["path"] for v in ds["spec"]["template"]["spec"]["volumes"] if "hostPath" in v
    }
    assert any(mounts.get(name) == path == KUBELET_DEVICE_PLUGINS for name, path in host.items()), (
        mounts,
        host,
    )


@pytest.mark.parametrize("tier", ACCELERATED)
def test_device_plugin_requests_equal_limits_and_harden_what_the_plugin_allows(tier: str) -> None:
    pod = daemonset(tier)["spec"]["template"]["spec"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not any(pod.get(f) for f in ("hostNetwork", "hostPID", "hostIPC"))
    for container in pod["containers"] + pod.get("initContainers", []):
        resources = container["resources"]
        assert set(resources["requests"]) == {"cpu", "memory"}, container["name"]
        assert resources["requests"] == resources["limits"], container["name"]
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"] == {"drop": ["ALL"]} and not sc.get("privileged")
        assert container["imagePullPolicy"] == "Always"
    # Host paths: the kubelet's device-plugin directory, and the upstream's own (Neuron: /run for its device
    # map, /opt/aws read-only); every mount the plugin does not write to is read-only.
    host = {v["name"]: v["hostPath"]["path"] for v in pod.get("volumes", []) if "hostPath" in v}
    assert set(host.values()) <= {KUBELET_DEVICE_PLUGINS, "/run", "/opt/aws"}, host
    for container in pod["containers"]:
        for mount in container["volumeMounts"]:
            if host.get(mount["name"]) not in {None, KUBELET_DEVICE_PLUGINS, "/run"}:
                assert mount.get("readOnly") is True, mount


@pytest.mark.parametrize("tier", ACCELERATED)
def test_device_plugin_api_access_is_what_it_needs(tier: str) -> None:
    """The NVIDIA plugin talks to the kubelet only; the Neuron plugin gets the chart's RBAC, no more."""
    objects = device_plugin_objects(tier)
    pod = daemonset(tier)["spec"]["template"]["spec"]
    roles = [o for o in objects if o["kind"] in {"Role", "ClusterRole"}]
    if not roles:
        assert pod["automountServiceAccountToken"] is False and "serviceAccountName" not in pod
        return
    (role,) = roles
    (binding,) = [o for o in objects if o["kind"] == "ClusterRoleBinding"]
    (account,) = [o for o in objects if o["kind"] == "ServiceAccount"]
    granted = set()
    for rule in role["rules"]:
        assert rule["apiGroups"] == [""] and "resourceNames" not in rule, rule
        granted |= {(r, v) for r in rule["resources"] for v in rule["verbs"]}
    assert granted <= NEURON_CHART_RULES, granted - NEURON_CHART_RULES
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": account["metadata"]["name"],
            "namespace": account["metadata"]["namespace"],
        }
    ]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert account["metadata"]["namespace"] == daemonset(tier)["metadata"]["namespace"]


@pytest.mark.parametrize("tier", ACCELERATED)
def test_device_plugin_admits_no_ingress(tier: str) -> None:
    (policy,) = [o for o in device_plugin_objects(tier) if o["kind"] == "NetworkPolicy"]
    ds = daemonset(tier)
    assert policy["metadata"]["namespace"] == ds["metadata"]["namespace"]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"] and "ingress" not in policy["spec"]


@pytest.mark.parametrize("tier", ACCELERATED)
def test_every_checkov_skip_gives_its_reason_and_is_in_the_readme(tier: str) -> None:
    readme = (INFRA / "README.md").read_text()
    for obj in device_plugin_objects(tier):
        for key, value in obj["metadata"].get("annotations", {}).items():
            if key.startswith("checkov.io/skip"):
                check, _, reason = value.partition("=")
                assert re.fullmatch(r"CKV2?_K8S_\d+", check) and len(reason) >= 20, value
                assert f"`{check}`" in readme and DEVICE_PLUGINS[tier].name in readme, check


# ---- the node budget: the device plugins' requests ------------------------------------------------


def scheduler_requests(ds: dict[str, Any]) -> tuple[int, int]:
    """(millicores, MiB) of one pod of the DaemonSet as the scheduler counts it: max(sum of the containers,
    the largest init container)."""
    pod = ds["spec"]["template"]["spec"]
    assert not any(c.get("restartPolicy") == "Always" for c in pod.get("initContainers", [])), "sidecars"

    def of(container: dict[str, Any]) -> tuple[float, float]:
        requests = container.get("resources", {}).get("requests", {})
        return float(parse_quantity(requests.get("cpu", "0"))), float(
            parse_quantity(requests.get("memory", "0"))
        )

    apps = [of(c) for c in pod["containers"]]
    inits = [of(c) for c in pod.get("initContainers", [])] or [(0.0, 0.0)]
    cpu = max(sum(a[0] for a in apps), max(i[0] for i in inits))
    memory = max(sum(a[1] for a in apps), max(i[1] for i in inits))
    return round(cpu * 1000), -(-int(memory) // 2**20)


@pytest.mark.parametrize("tier", ["cpu", *ACCELERATED])
def test_tier_daemonsets_are_the_device_plugins_that_land_on_the_tier(tier: str) -> None:
    landing = {
        (f"{ds['metadata']['namespace']}/{ds['metadata']['name']}", *scheduler_requests(ds))
        for plugin in DEVICE_PLUGINS
        for ds in [daemonset(plugin)]
        if lands_on(ds, tier)
    }
    counted = {(d.name, d.cpu_m, d.memory_mib) for d in tiers.tier(tier).placement.daemonsets}
    assert counted == landing, (tier, counted, landing)
    for d in tiers.tier(tier).placement.daemonsets:
        assert str(DEVICE_PLUGINS[tier].relative_to(INFRA.parent)) in d.source, d.source


@pytest.mark.parametrize("tier", ["cpu", *ACCELERATED])
def test_node_budget_counts_the_tiers_device_plugin(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(daemonsets.EXTRA_SETTING, raising=False)
    plugins = [scheduler_requests(daemonset(p)) for p in DEVICE_PLUGINS if lands_on(daemonset(p), tier)]
    expected = (
        daemonsets.DAEMONSETS_CPU_M + sum(p[0] for p in plugins),
        daemonsets.DAEMONSETS_MEMORY_MIB + sum(p[1] for p in plugins),
    )
    assert daemonsets.node_daemonset_requests(tiers.tier(tier).placement.daemonsets) == expected
