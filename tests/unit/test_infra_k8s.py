"""infra/k8s and infra/helm: benchmark namespace, its service account, the workers' RBAC, Helm values.

Core kinds are validated offline with kubernetes-validate (strict: unknown fields fail) for every Kubernetes
version the suite supports. The device plugins in infra/k8s/device-plugins/ (applied by Terraform with their
NodePool, not with `kubectl apply -f infra/k8s/`) have their own tests: tests/unit/test_infra_accelerated.py.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from accelbench.k8s import placement

from tests.support.infra import DEVICE_PLUGINS, INFRA, helm_values
from tests.support.paths import REPO

K8S = INFRA / "k8s"
K8S_VERSIONS = ("1.33", "1.34", "1.35", "1.36", "1.37")
PSA = "pod-security.kubernetes.io"
# What KubernetesPodOperator does in the benchmark namespace, and nothing more.
POD_RUNNER_RULES = {
    "pods": {"create", "get", "list", "watch", "delete", "patch"},
    "pods/log": {"get"},
    "pods/exec": {"create", "get"},  # do_xcom_push reads the xcom sidecar's file through exec
    "events": {"list"},  # log_events_on_failure
}


@cache
def manifests() -> tuple[tuple[Path, dict[str, Any]], ...]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        found += [(path, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return tuple(found)


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in manifests() if doc["kind"] == kind]


def worker_service_account() -> str:
    return helm_values()["workers"]["serviceAccount"]["name"]


# ---- validation ------------------------------------------------------------------------------


def test_there_are_manifests() -> None:
    kinds = sorted(doc["kind"] for _, doc in manifests())
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Namespace",
        "NetworkPolicy",
        "Role",
        "RoleBinding",
        "ServiceAccount",
    ]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_manifests_validate_strictly_against_kubernetes(version: str) -> None:
    for path, doc in manifests():
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name} {doc['kind']} on {version}: {exc}")


def test_every_namespaced_object_lives_in_the_benchmark_namespace() -> None:
    for path, doc in manifests():
        if doc["kind"] not in {"Namespace", "ClusterRole", "ClusterRoleBinding"}:  # cluster-scoped kinds
            assert doc["metadata"]["namespace"] == placement.BENCHMARK_NAMESPACE, (path.name, doc["kind"])


# ---- the namespace ---------------------------------------------------------------------------


def test_namespace_is_pod_security_privileged_with_the_reason_written_down() -> None:
    (ns,) = of_kind("Namespace")
    assert ns["metadata"]["name"] == placement.BENCHMARK_NAMESPACE
    labels = ns["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"{PSA}/{mode}"] == "privileged", mode
    reason = ns["metadata"]["annotations"]["accelbench.io/pod-security-reason"]
    for word in ("SYS_NICE", "seccomp", "Unconfined", "NUMA", "Baseline"):
        assert word in reason, word


def test_benchmark_service_account_mounts_no_api_token() -> None:
    (sa,) = of_kind("ServiceAccount")
    assert sa["automountServiceAccountToken"] is False


# ---- RBAC ------------------------------------------------------------------------------------


def test_the_only_cluster_scoped_grant_is_reading_nodes() -> None:
    """Zone and capacity type of a benchmark's node come from the node's labels (provenance, spot cost)."""
    (cluster_role,) = of_kind("ClusterRole")
    assert cluster_role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    (binding,) = of_kind("ClusterRoleBinding")
    assert binding["roleRef"]["name"] == cluster_role["metadata"]["name"]
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": worker_service_account(),
            "namespace": helm_values()["config"]["kubernetes_executor"]["namespace"],
        }
    ]
    cluster_kinds: dict[Path, list[str]] = {}
    for path in INFRA.rglob("*.yaml"):
        for m in re.finditer(r"^kind:\s*(Cluster\w+)", path.read_text(), re.M):
            cluster_kinds.setdefault(path, []).append(m.group(1))
    # Besides this one, only the Neuron device plugin's own grant (the chart's, checked in
    # tests/unit/test_infra_accelerated.py); it is applied with the Neuron NodePool, not with this folder.
    neuron = cluster_kinds.pop(DEVICE_PLUGINS["neuron"], [])
    assert sorted(neuron) == ["ClusterRole", "ClusterRoleBinding"]
    others = sorted(k for kinds in cluster_kinds.values() for k in kinds)
    assert others == ["ClusterRole", "ClusterRoleBinding"]


def test_role_grants_exactly_what_the_pod_operator_needs() -> None:
    (role,) = of_kind("Role")
    assert role["metadata"]["namespace"] == placement.BENCHMARK_NAMESPACE
    granted: dict[str, set[str]] = {}
    for rule in role["rules"]:
        assert rule["apiGroups"] == [""], rule
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule, rule
        for resource in rule["resources"]:
            assert "*" not in resource
            granted.setdefault(resource, set()).update(rule["verbs"])
    assert granted == POD_RUNNER_RULES
    assert not any("*" in verb for verbs in granted.values() for verb in verbs)


def test_role_is_bound_to_the_airflow_worker_service_account_only() -> None:
    (role,) = of_kind("Role")
    (binding,) = of_kind("RoleBinding")
    assert binding["metadata"]["namespace"] == placement.BENCHMARK_NAMESPACE
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": worker_service_account(),
            "namespace": helm_values()["config"]["kubernetes_executor"]["namespace"],
        }
    ]
    assert worker_service_account() == "airflow-worker"


# ---- Helm values -----------------------------------------------------------------------------


def test_helm_values_use_the_kubernetes_executor_and_this_image() -> None:
    values = helm_values()
    assert values["executor"] == "KubernetesExecutor"
    image = values["images"]["airflow"]
    assert image["repository"] and image["tag"]
    assert (
        "FROM apache/airflow:" + values["airflowVersion"]
        in (REPO / "docker" / "airflow" / "Dockerfile").read_text()
    )
    assert values["workers"]["serviceAccount"]["create"] is True


def test_helm_values_load_no_examples() -> None:
    assert str(helm_values()["config"]["core"]["load_examples"]).lower() == "false"


def test_helm_values_set_only_documented_accelbench_settings() -> None:
    readme = (REPO / "docs" / "reference" / "configuration.md").read_text()
    env = helm_values()["env"]
    names = [item["name"] for item in env]
    assert len(names) == len(set(names))
    assert all(name.startswith("ACCELBENCH_") for name in names), names
    for name in names:
        assert f"`{name}`" in readme, f"{name} is not in the settings table (docs/reference/configuration.md)"
    assert "ACCELBENCH_CATALOG_CONN_ID" in names


def test_helm_values_take_connections_from_secrets_never_plain_values() -> None:
    values = helm_values()
    secrets = values["secret"]
    assert secrets, "connections come from a Kubernetes Secret"
    for item in secrets:
        assert item["envName"].startswith("AIRFLOW_CONN_"), item
        assert set(item) == {"envName", "secretName", "secretKey"}, item
    catalog_conn = next(i["value"] for i in values["env"] if i["name"] == "ACCELBENCH_CATALOG_CONN_ID")
    assert f"AIRFLOW_CONN_{catalog_conn.upper()}" in {i["envName"] for i in secrets}
    for item in values["env"]:
        assert "value" in item and "valueFrom" not in item, item
        assert not re.search(r"(password|secret|token)=|://[^/]*:[^/]*@|AKIA[0-9A-Z]{16}", str(item["value"]))


def test_benchmark_namespace_denies_ingress_to_every_pod() -> None:
    (policy,) = [doc for _, doc in manifests() if doc["kind"] == "NetworkPolicy"]
    assert policy["metadata"]["namespace"] == placement.BENCHMARK_NAMESPACE
    assert policy["spec"]["podSelector"] == {} and policy["spec"]["policyTypes"] == ["Ingress"]
    assert "ingress" not in policy["spec"]
