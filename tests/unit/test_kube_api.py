"""The API-server stand-in (tests/support/kube_api.py) refuses what a real API server refuses.

Everything goes through the real `kubernetes` Python client (and the provider's PodManager), so a test
sees what KubernetesPodOperator would see: an `ApiException` with the API server's status and `Status`.
"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.support import kube_api
from tests.support.kube_api import K8S_VERSIONS, FakeKubeAPI, schema_problems
from tests.support.pods import render_benchmark_pod

NS = "accelbench-benchmarks"
SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


@pytest.fixture(scope="module")
def cpu_pod(kubeconfig: Path) -> dict[str, Any]:
    """The benchmark pod exactly as BenchmarkPod builds it (camelCase, as the provider sends it)."""
    return render_benchmark_pod(kubeconfig, "vllm-cpu", "r8g.48xlarge")


@pytest.fixture(scope="module")
def gpu_pod(kubeconfig: Path) -> dict[str, Any]:
    return render_benchmark_pod(kubeconfig, "vllm-gpu", "g6e.12xlarge")


@pytest.fixture
def fake() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(mode="run") as server:
        yield server


@pytest.fixture
def api(fake: FakeKubeAPI, tmp_path: Path) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(fake.kubeconfig(tmp_path / "kubeconfig"))))


def at(manifest: dict[str, Any], where: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """A copy of `manifest` with the value at path `where` set to `value` (deleted if `value` is `...`)."""
    out = copy.deepcopy(manifest)
    node: Any = out
    for part in where[:-1]:
        node = node[part]
    if value is ...:
        del node[where[-1]]
    else:
        node[where[-1]] = value
    return out


def pod(manifest: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`at()` for dotted paths: `pod(m, **{"spec.containers.0.resourcez": {}})`."""
    for where, value in changes.items():
        manifest = at(manifest, tuple(int(p) if p.isdigit() else p for p in where.split(".")), value)
    return manifest


def refused(call: Any, status: int) -> dict[str, Any]:
    """The `Status` an API call was refused with, after checking the HTTP status."""
    with pytest.raises(ApiException) as caught:
        call()
    assert caught.value.status == status, caught.value.body
    return json.loads(caught.value.body)


def assert_invalid(doc: dict[str, Any], name: str, field: str, *words: str) -> dict[str, Any]:
    """`doc` is the API server's 422 answer for an invalid pod, naming `field` (and `words`)."""
    assert {k: doc[k] for k in ("kind", "apiVersion", "status", "reason", "code")} == {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "Invalid",
        "code": 422,
    }, doc
    assert doc["message"].startswith(f'Pod "{name}" is invalid: '), doc["message"]
    assert doc["details"]["name"] == name and doc["details"]["kind"] == "Pod", doc["details"]
    (cause,) = [c for c in doc["details"]["causes"] if c["field"] == field] or [None]
    assert cause is not None, (field, doc["details"]["causes"])
    assert set(cause) == {"reason", "message", "field"} and cause["reason"].startswith("Field"), cause
    assert field in doc["message"] and cause["message"] in doc["message"], doc["message"]
    for word in words:
        assert word in cause["message"], (word, cause)
    return cause


# ---- the versions and the validator ----------------------------------------------------------------


def test_every_supported_kubernetes_version_has_its_own_strict_schemas() -> None:
    bundled = {kubernetes_validate.utils.major_minor(v) for v in kubernetes_validate.utils.all_versions()}
    assert set(K8S_VERSIONS) <= bundled, bundled
    assert kubernetes_validate.utils.major_minor(kubernetes_validate.utils.latest_version()) >= "1.37"
    for version in K8S_VERSIONS:
        assert (SCHEMAS / f"v{version}.0-local-strict" / "pod-v1.json").is_file(), version
    with pytest.raises(LookupError, match=r"no schemas for Kubernetes 1\.99"):
        FakeKubeAPI(versions=("1.99",))  # never a silent fallback to an older schema


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_the_stand_in_agrees_with_kubernetes_validate(cpu_pod: dict[str, Any], version: str) -> None:
    """Its compiled validators say what `kubernetes_validate.validate(..., strict=True)` says."""
    kubernetes_validate.validate(cpu_pod, version, strict=True)
    assert schema_problems(cpu_pod, versions=[version]) == []
    for bad in (
        pod(cpu_pod, **{"spec.containers.0.resourcez": {"limits": {}}}),
        pod(cpu_pod, **{"spec.initContainers.0.ports.0.containerPort": "http"}),
        pod(cpu_pod, **{"spec.containers.0.name": ...}),
    ):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(bad, version, strict=True)
        assert schema_problems(bad, versions=[version]), bad


def test_each_distinct_manifest_is_validated_once_per_version(cpu_pod: dict[str, Any]) -> None:
    fresh = pod(cpu_pod, **{"metadata.labels.cache-probe": "once"})
    before = kube_api.SCHEMA_RUNS[0]
    assert schema_problems(fresh) == []
    assert kube_api.SCHEMA_RUNS[0] == before + len(K8S_VERSIONS)
    assert schema_problems(copy.deepcopy(fresh)) == [] and schema_problems(fresh) == []
    assert kube_api.SCHEMA_RUNS[0] == before + len(K8S_VERSIONS)  # from the cache
    bad = pod(fresh, **{"spec.containers.0.resourcez": {}})
    assert schema_problems(bad) and schema_problems(bad)
    assert kube_api.SCHEMA_RUNS[0] == before + 2 * len(K8S_VERSIONS)


# ---- (a) the benchmark pod is accepted ------------------------------------------------------------


@pytest.mark.parametrize("which", ["cpu_pod", "gpu_pod"])
def test_the_benchmark_pod_is_created(
    which: str, request: pytest.FixtureRequest, fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    manifest = request.getfixturevalue(which)
    created = api.create_namespaced_pod(NS, manifest)
    assert fake.rejections == [], fake.rejections
    name = manifest["metadata"]["name"]
    assert created.metadata.name == name and created.metadata.uid and created.metadata.namespace == NS
    stored = fake.pods[(NS, name)]
    assert {k: v for k, v in stored.items() if k != "metadata"} == {
        k: v for k, v in manifest.items() if k != "metadata"
    }
    assert (
        api.read_namespaced_pod(name, NS).spec.containers[0].name == manifest["spec"]["containers"][0]["name"]
    )


def test_kind_and_api_version_come_from_the_url_when_the_client_leaves_them_out(
    cpu_pod: dict[str, Any], fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    bare = pod(cpu_pod, kind=..., apiVersion=...)
    api.create_namespaced_pod(NS, bare)
    assert fake.rejections == []
    stored = fake.pods[(NS, cpu_pod["metadata"]["name"])]
    assert (stored["apiVersion"], stored["kind"]) == ("v1", "Pod")
    doc = refused(lambda: api.create_namespaced_pod(NS, pod(cpu_pod, kind="Service")), 400)
    assert doc["reason"] == "BadRequest" and "must be of type Pod" in doc["message"]


def test_generate_name_names_the_pod_and_a_second_create_of_one_name_conflicts(
    cpu_pod: dict[str, Any], fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    generated = api.create_namespaced_pod(
        NS, pod(cpu_pod, **{"metadata.name": ..., "metadata.generateName": "bench-"})
    )
    assert generated.metadata.name.startswith("bench-") and len(generated.metadata.name) == len("bench-") + 5
    api.create_namespaced_pod(NS, cpu_pod)
    doc = refused(lambda: api.create_namespaced_pod(NS, cpu_pod), 409)
    assert doc["reason"] == "AlreadyExists" and len(fake.pods) == 2


# ---- (b) a malformed pod gets 422 naming the field ----------------------------------------------------


C0, I0 = ("spec", "containers", 0), ("spec", "initContainers", 0)


MALFORMED = [
    ((*C0, "resourcez"), {"limits": {"cpu": "1"}}, "spec.containers[0].resourcez", ["unknown field"]),
    (
        (*I0, "ports", 0, "containerPort"),
        "http",
        "spec.initContainers[0].ports[0].containerPort",
        ["'http' is not of type 'integer'"],
    ),
    ((*C0, "name"), ..., "spec.containers[0].name", ["Required value"]),
    (
        ("spec", "nodeSelector", "karpenter.sh/nodepool"),
        3,
        "spec.nodeSelector[karpenter.sh/nodepool]",
        ["is not of type 'string'"],
    ),
    ((*C0, "name"), "Base_1", "spec.containers[0].name", ["RFC 1123 label"]),
    ((*C0, "name"), "server", "spec.containers[0].name", ["Duplicate value"]),
    (
        ("metadata", "labels", "app.kubernetes.io/name"),
        "not valid!",
        "metadata.labels",
        ["a valid label"],
    ),
    (
        (*I0, "resources", "limits", "memory"),
        "1416 GiB",
        "spec.initContainers[0].resources.limits.memory",
        ["regular expression of a quantity"],
    ),
    (
        (*I0, "resources", "requests", "cpu"),
        "191",
        "spec.initContainers[0].resources.requests",
        ["cpu limit"],
    ),
    ((*I0, "restartPolicy"), ..., "spec.initContainers[0].startupProbe", ["restartPolicy=Always"]),
    (
        (*I0, "volumeMounts", 0, "name"),
        "nowhere",
        "spec.initContainers[0].volumeMounts[0].name",
        ["Not found"],
    ),
    (("spec", "restartPolicy"), "Sometimes", "spec.restartPolicy", ["Unsupported value", '"Never"']),
    (
        ("spec", "tolerations", 0, "effect"),
        "NoScheduling",
        "spec.tolerations[0].effect",
        ["Unsupported value"],
    ),
    ((*C0, "imagePullPolicy"), "always", "spec.containers[0].imagePullPolicy", ["Unsupported value"]),
]


@pytest.mark.parametrize(
    ("where", "value", "field", "words"), MALFORMED, ids=[f"{m[2]}: {m[3][0]}" for m in MALFORMED]
)
def test_a_malformed_pod_is_refused_422_naming_the_field(
    cpu_pod: dict[str, Any],
    fake: FakeKubeAPI,
    api: client.CoreV1Api,
    where: tuple[str | int, ...],
    value: Any,
    field: str,
    words: list[str],
) -> None:
    bad = at(cpu_pod, where, value)
    name = cpu_pod["metadata"]["name"]
    doc = refused(lambda: api.create_namespaced_pod(NS, bad), 422)
    assert_invalid(doc, name, field, *words)
    assert not fake.pods, "a refused pod must not be stored"
    (rejection,) = fake.rejections
    assert (rejection.method, rejection.code, rejection.reason) == ("POST", 422, "Invalid")
    assert field in rejection.fields and rejection.body == bad


def test_a_missing_name_and_a_foreign_namespace_are_refused(
    cpu_pod: dict[str, Any], fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    doc = refused(lambda: api.create_namespaced_pod(NS, pod(cpu_pod, **{"metadata.name": ...})), 422)
    assert_invalid(doc, "", "metadata.name", "name or generateName is required")
    doc = refused(lambda: api.create_namespaced_pod("elsewhere", cpu_pod), 400)
    assert doc["reason"] == "BadRequest" and "does not match the namespace" in doc["message"]
    assert not fake.pods and [r.code for r in fake.rejections] == [422, 400]


def test_every_problem_is_a_cause_and_the_message_lists_them(
    cpu_pod: dict[str, Any], api: client.CoreV1Api
) -> None:
    bad = pod(
        cpu_pod,
        **{"spec.containers.0.resourcez": {}, "spec.initContainers.0.ports.0.containerPort": "http"},
    )
    doc = refused(lambda: api.create_namespaced_pod(NS, bad), 422)
    fields = [c["field"] for c in doc["details"]["causes"]]
    assert fields == ["spec.containers[0].resourcez", "spec.initContainers[0].ports[0].containerPort"]
    assert doc["message"].startswith(f'Pod "{cpu_pod["metadata"]["name"]}" is invalid: [spec.containers[0]')
    for cause in doc["details"]["causes"]:  # each found by every supported version's schema
        assert "Kubernetes 1.33, 1.34, 1.35, 1.36, 1.37" in cause["message"], cause


def v1(api: client.CoreV1Api, manifest: dict[str, Any]) -> client.V1Pod:
    """`manifest` as the V1Pod the operator hands PodManager (the client's own deserializer)."""
    response = type("Response", (), {"data": json.dumps(manifest)})()
    return api.api_client.deserialize(response, "V1Pod")


def test_the_providers_pod_manager_gets_the_422(
    cpu_pod: dict[str, Any], fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    """What KubernetesPodOperator itself sees: PodManager.create_pod raises the 422, not retried."""
    from airflow.providers.cncf.kubernetes.utils.pod_manager import PodManager

    manager = PodManager(kube_client=api)
    v1pod = v1(api, pod(cpu_pod, **{"spec.containers.0.image": ""}))
    doc = refused(lambda: manager.create_pod(v1pod), 422)
    assert_invalid(doc, cpu_pod["metadata"]["name"], "spec.containers[0].image", "Required value")
    assert fake.count("POST") == 1, "a 422 is final: the provider does not retry it"
    good = v1(api, cpu_pod)
    manager.create_pod(good)
    manager.delete_pod(good)  # sends a V1DeleteOptions body
    assert not fake.pods and len(fake.rejections) == 1


# ---- (c) a field that 1.37 has and 1.33 lacks ------------------------------------------------------


def _pod_spec_fields(version: str) -> set[str]:
    defs = json.loads((SCHEMAS / f"v{version}.0-local-strict" / "_definitions.json").read_text())["$defs"]
    return set(defs["io.k8s.api.core.v1.PodSpec"]["properties"])


def test_a_pod_valid_for_1_37_but_not_1_33_is_refused(
    cpu_pod: dict[str, Any], fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    """`spec.hostnameOverride` (HostnameOverride, Kubernetes 1.34) is in the 1.34-1.37 schemas, not 1.33's."""
    assert "hostnameOverride" in _pod_spec_fields("1.37") - _pod_spec_fields("1.33")
    assert all("hostnameOverride" in _pod_spec_fields(v) for v in ("1.34", "1.35", "1.36", "1.37"))
    newer = pod(cpu_pod, **{"spec.hostnameOverride": "bench"})
    kubernetes_validate.validate(newer, "1.37", strict=True)
    assert schema_problems(newer, versions=["1.37"]) == []
    doc = refused(lambda: api.create_namespaced_pod(NS, newer), 422)
    cause = assert_invalid(doc, cpu_pod["metadata"]["name"], "spec.hostnameOverride", "unknown field")
    assert cause["message"].endswith("(strict schema, Kubernetes 1.33)"), cause
    assert not fake.pods


def test_a_1_37_only_cluster_would_take_that_pod(cpu_pod: dict[str, Any], tmp_path: Path) -> None:
    with FakeKubeAPI(versions=("1.37",)) as only_new:
        api = client.CoreV1Api(config.new_client_from_config(str(only_new.kubeconfig(tmp_path / "kc"))))
        api.create_namespaced_pod(NS, pod(cpu_pod, **{"spec.hostnameOverride": "bench"}))
        assert only_new.rejections == [] and len(only_new.pods) == 1


# ---- patches: the patched pod must still be valid --------------------------------------------------


@pytest.fixture
def created(cpu_pod: dict[str, Any], fake: FakeKubeAPI, api: client.CoreV1Api) -> str:
    api.create_namespaced_pod(NS, cpu_pod)
    return cpu_pod["metadata"]["name"]


def test_the_providers_label_patches_apply(created: str, fake: FakeKubeAPI, api: client.CoreV1Api) -> None:
    """As `patch_already_checked` sends it: a dict body, which the client sends as a strategic merge."""
    patched = api.patch_namespaced_pod(created, NS, {"metadata": {"labels": {"already_checked": "True"}}})
    assert patched.metadata.labels["already_checked"] == "True"
    assert patched.metadata.labels["accelbench.io/runtime"] == "vllm-cpu"  # merged, not replaced
    assert patched.metadata.resource_version == "2" and fake.rejections == []
    ops = [{"op": "add", "path": "/metadata/labels/accelbench.io~1checked", "value": "yes"}]
    assert api.patch_namespaced_pod(created, NS, ops).metadata.labels["accelbench.io/checked"] == "yes"
    image = [{"op": "replace", "path": "/spec/containers/0/image", "value": "accelbench/loadgen:next"}]
    assert api.patch_namespaced_pod(created, NS, image).spec.containers[0].image == "accelbench/loadgen:next"
    assert fake.rejections == []


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (
            {"metadata": {"labels": {"already_checked": True}}},
            "metadata.labels[already_checked]",
            ["not of type"],
        ),
        ({"metadata": {"labels": {"already_checked": "not valid!"}}}, "metadata.labels", ["a valid label"]),
        ({"metadata": {"labelz": {"a": "b"}}}, "metadata.labelz", ["unknown field"]),
        ({"spec": {"restartPolicy": "Always"}}, "spec", ["pod updates may not change fields"]),
        ({"metadata": {"uid": "another"}}, "metadata.uid", ["immutable"]),
        (
            [{"op": "add", "path": "/spec/containers/0/resourcez", "value": {}}],
            "spec.containers[0].resourcez",
            ["unknown field"],
        ),
    ],
    ids=["label-type", "label-syntax", "unknown-metadata", "spec-change", "uid", "json-patch-unknown"],
)
def test_a_patch_that_leaves_an_invalid_pod_is_refused(
    created: str, fake: FakeKubeAPI, api: client.CoreV1Api, body: Any, field: str, words: list[str]
) -> None:
    before = copy.deepcopy(fake.pods[(NS, created)])
    doc = refused(lambda: api.patch_namespaced_pod(created, NS, body), 422)
    assert_invalid(doc, created, field, *words)
    assert fake.pods[(NS, created)] == before, "a refused patch must change nothing"
    (rejection,) = fake.rejections
    assert rejection.method == "PATCH" and rejection.body == body


def test_a_patch_in_an_unknown_format_is_refused(created: str, fake: FakeKubeAPI) -> None:
    doc = _raw(fake, "PATCH", f"/api/v1/namespaces/{NS}/pods/{created}", {"metadata": {}}, "application/json")
    assert doc["code"] == 415 and doc["reason"] == "UnsupportedMediaType"


# ---- the rest of what the tests send: delete options, log and exec containers ------------------------


def _raw(fake: FakeKubeAPI, method: str, path: str, body: Any, content_type: str = "application/json") -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{fake.port}{path}",
        data=json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": content_type},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())


def test_malformed_delete_options_are_refused(created: str, fake: FakeKubeAPI, api: client.CoreV1Api) -> None:
    path = f"/api/v1/namespaces/{NS}/pods/{created}"
    doc = _raw(fake, "DELETE", path, {"gracePeriodSecondz": 0})
    assert doc["code"] == 400 and "gracePeriodSecondz" in doc["message"], doc
    doc = _raw(fake, "DELETE", path, {"gracePeriodSeconds": "now"})
    assert doc["code"] == 400 and "gracePeriodSeconds" in doc["message"], doc
    assert (NS, created) in fake.pods
    api.delete_namespaced_pod(created, NS, body=client.V1DeleteOptions(grace_period_seconds=0))
    assert not fake.pods


def test_log_and_exec_need_a_container_of_the_pod(
    created: str, fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    doc = refused(lambda: api.read_namespaced_pod_log(created, NS), 400)
    assert "a container name must be specified" in doc["message"] and "[server]" in doc["message"]
    doc = refused(lambda: api.read_namespaced_pod_log(created, NS, container="nope"), 400)
    assert doc["message"] == f"container nope is not valid for pod {created}"
    assert "driving the levels" in api.read_namespaced_pod_log(created, NS, container="base")
    assert "driving the levels" in api.read_namespaced_pod_log(created, NS, container="server")


# ---- a pod's start-up, as the API keeps it --------------------------------------------------------------


def test_every_start_up_phase_is_read_from_the_pods_conditions_events_and_node(
    cpu_pod: dict[str, Any], fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    """The stand-in plays a pod's start-up (kube_api.TIMELINE: node launched, scheduled, image pulled, server
    started, its startup probe passed) in the shapes Kubernetes writes, each served object strict-validated;
    accelbench.k8s.pod_startup reads every phase back through the real client."""
    from accelbench.k8s.pod_startup import pod_startup

    name = cpu_pod["metadata"]["name"]
    api.create_namespaced_pod(NS, cpu_pod)
    pod = api.read_namespaced_pod(name, NS)
    events = api.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
    node = api.read_node(pod.spec.node_name)
    assert fake.errors == [], fake.errors  # every event and the node passed the strict schemas
    found = pod_startup(pod, events, node, "server", "base")
    assert found is not None and found.execution_mode == "kubernetes"
    t = kube_api.TIMELINE
    assert found.phases == {
        "scheduling_s": t["scheduled"],
        "image_pull_s": t["server_started"] - t["scheduled"],
        "server_start_s": t["loadgen_started"] - t["server_started"],
    }
    assert found.ready_s == t["loadgen_started"] == sum(found.phases.values())  # type: ignore[arg-type]
    assert found.figures == {
        "node_launch_s": t["node_created"],
        "kubelet_pull_s": kube_api.PULL_S,
        "weights_fetch_s": None,  # no weights init container: the CPU tier streams or pulls from the Hub
    }
    assert found.nodeclaim == kube_api.NODECLAIM
    assert found.started_at == pod.metadata.creation_timestamp.isoformat()

    # A node older than the pod (already there): no launch; an image already on the node: no pull time.
    fake.timeline["node_created"] = -600
    node = api.read_node(pod.spec.node_name)
    image = cpu_pod["spec"]["initContainers"][0]["image"]
    for event in events:
        if event.reason == "Pulled":
            event.message = f'Container image "{image}" already present on machine'
    again = pod_startup(pod, events, node, "server", "base")
    assert again is not None and again.figures == {
        "node_launch_s": None,
        "kubelet_pull_s": 0.0,
        "weights_fetch_s": None,
    }


def test_the_weights_copy_into_the_nodes_cache_is_its_init_containers_run(
    cpu_pod: dict[str, Any], fake: FakeKubeAPI, api: client.CoreV1Api
) -> None:
    """A pod whose runtime cannot stream its weights (issue 49, point 2) copies them first in its `weights`
    init container: the start-up's weights_fetch_s is that container's run, from its terminated state."""
    from accelbench.k8s.pod_startup import pod_startup

    weights = {**cpu_pod["spec"]["initContainers"][0], "name": "weights", "args": ["s3://b/m", "/w/b/m"]}
    weights.pop("restartPolicy")
    for probe in ("startupProbe", "readinessProbe"):  # an init container that runs to completion has none
        weights.pop(probe, None)
    pod_doc = json.loads(json.dumps(cpu_pod))
    pod_doc["spec"]["initContainers"].insert(0, weights)
    api.create_namespaced_pod(NS, pod_doc)
    pod = api.read_namespaced_pod(pod_doc["metadata"]["name"], NS)
    assert fake.errors == [], fake.errors
    assert [s.name for s in pod.status.init_container_statuses] == ["weights", "server"]
    found = pod_startup(pod, [], api.read_node(pod.spec.node_name), "server", "base", "weights")
    t = kube_api.TIMELINE
    assert found is not None
    assert found.figures["weights_fetch_s"] == t["weights_finished"] - t["weights_started"]
