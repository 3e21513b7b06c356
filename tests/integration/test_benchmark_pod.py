"""The benchmark pod as KubernetesPodOperator builds it: strict schema validation plus explicit asserts."""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from accelbench.k8s import placement
from accelbench.k8s.pod import CHECKOV_SKIPS, startup_failure_threshold
from accelbench.loadgen.contract import SPEC_ENV
from accelbench.tiers import CPU, GPU

from tests.support.paths import REPO
from tests.support.pods import render_benchmark_pod as render

K8S_VERSIONS = ["1.33", "1.34", "1.35", "1.36", "1.37"]


def _quantity_gib(q: str) -> float:
    assert q.endswith("Gi") or q.endswith("Mi"), q
    return float(q[:-2]) / (1 if q.endswith("Gi") else 1024)


def _check_guaranteed(container: dict) -> None:
    res = container["resources"]
    assert res["requests"] == res["limits"], container["name"]
    assert {"cpu", "memory"} <= set(res["requests"]), container["name"]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_cpu_pod_validates_strictly(kubeconfig: Path, version: str) -> None:
    kubernetes_validate.validate(render(kubeconfig, "vllm-cpu", "r8g.48xlarge"), version, strict=True)


def test_cpu_pod_spec_points(kubeconfig: Path) -> None:
    pod = render(kubeconfig, "vllm-cpu", "r8g.48xlarge")
    spec = pod["spec"]
    server = spec["initContainers"][0]
    main = spec["containers"][0]
    assert server["name"] == "server" and server["restartPolicy"] == "Always"  # native sidecar
    assert server["image"] == "vllm/vllm-openai-cpu:v0.19.1-arm64"
    assert server["startupProbe"]["httpGet"]["path"] == "/health"
    assert server["startupProbe"]["failureThreshold"] == startup_failure_threshold(0.0135) >= 18
    assert server["readinessProbe"]["httpGet"]["path"] == "/health"
    env = {e["name"]: e for e in server["env"]}
    (spec_json,) = json.loads({e["name"]: e for e in main["env"]}[SPEC_ENV]["value"])["specs"]
    planned_kv = spec_json["server"]["kv_cache_gib"]
    assert int(env["VLLM_CPU_KVCACHE_SPACE"]["value"]) == max(1, -(-planned_kv // 2))  # per rank, 2 ranks
    assert env["VLLM_CPU_OMP_THREADS_BIND"]["value"] == "auto"
    assert "HF_TOKEN" not in env  # the token is a mounted Secret file, never an env value
    assert env["HF_TOKEN_PATH"]["value"] == "/var/run/secrets/huggingface/token"
    token = next(v for v in spec["volumes"] if v["name"] == "hf-token")
    assert token["secret"] == {"secretName": "accelbench-hf-token", "optional": True, "defaultMode": 0o440}
    assert spec["serviceAccountName"] == placement.BENCHMARK_SERVICE_ACCOUNT
    assert spec["automountServiceAccountToken"] is False
    args = server["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "2"  # r8g.48xlarge has 2 NUMA nodes
    assert "--gpu-memory-utilization" not in args
    served = args[args.index("--served-model-name") + 1]
    assert (
        json.loads({e["name"]: e for e in main["env"]}[SPEC_ENV]["value"])["specs"][0]["server"][
            "served_model_name"
        ]
        == served
    )
    sc = server["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"], "add": ["SYS_NICE"]}
    assert sc["seccompProfile"]["type"] == "Unconfined"
    assert (
        main["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    )  # Unconfined on the server only
    assert main["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    for container in [*spec["initContainers"], *spec["containers"]]:
        _check_guaranteed(container)
        assert not any("nvidia" in k or "neuron" in k for k in container["resources"]["limits"])
    assert server["resources"]["limits"]["cpu"] == "190"
    assert _quantity_gib(server["resources"]["limits"]["memory"]) + 2 < 1536 * 0.925
    assert spec["shareProcessNamespace"] is True and spec["enableServiceLinks"] is False
    shm = next(v for v in spec["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in server["volumeMounts"]
    assert spec["nodeSelector"] == {
        placement.ARCH_LABEL: "arm64",
        placement.INSTANCE_TYPE_LABEL: "r8g.48xlarge",
        placement.NODEPOOL_LABEL: CPU.placement.nodepool,
    }
    tolerations = {(t["key"], t["value"], t["effect"], t["operator"]) for t in spec["tolerations"]}
    assert tolerations == {(t.key, t.value, t.effect, "Equal") for t in CPU.placement.taints}
    assert pod["metadata"]["annotations"][placement.DO_NOT_DISRUPT] == "true"
    assert pod["metadata"]["namespace"] == placement.BENCHMARK_NAMESPACE
    assert spec["restartPolicy"] == "Never"


def test_load_generator_gets_the_lake_its_node_and_a_writable_tokenizer_cache(kubeconfig: Path) -> None:
    main = render(kubeconfig, "vllm-cpu", "m8g.xlarge")["spec"]["containers"][0]
    env = {e["name"]: e for e in main["env"]}
    assert env["ACCELBENCH_LAKE_URI"]["value"] == "s3://lake-bucket/accelbench"
    assert env["ACCELBENCH_EXECUTION_MODE"]["value"] == "kubernetes"
    assert env["ACCELBENCH_NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["HF_HOME"]["value"].startswith(
        "/tmp/"
    )  # the root filesystem is read-only; /tmp is an emptyDir
    assert {"name": "tmp", "mountPath": "/tmp"} in main["volumeMounts"]
    assert env["HF_TOKEN_PATH"]["value"] == "/var/run/secrets/huggingface/token"
    assert {"name": "hf-token", "mountPath": "/var/run/secrets/huggingface", "readOnly": True} in main[
        "volumeMounts"
    ]
    assert not any(k.startswith("AWS_") for k in env)  # S3 access comes from the pod's identity only
    assert main["command"] == ["accelbench-loadgen"]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_gpu_pod_gets_gpus_and_the_gpu_pool(kubeconfig: Path, version: str) -> None:
    pod = render(kubeconfig, "vllm-gpu", "g6e.12xlarge")
    kubernetes_validate.validate(pod, version, strict=True)
    server = pod["spec"]["initContainers"][0]
    assert server["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert server["image"] == "vllm/vllm-openai:v0.19.1"
    assert server["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["spec"]["nodeSelector"][placement.NODEPOOL_LABEL] == GPU.placement.nodepool
    keys = {t["key"] for t in pod["spec"]["tolerations"]}
    assert keys == {t.key for t in GPU.placement.taints}


@pytest.mark.parametrize(
    ("tier", "runtime", "instance_type"),
    [
        ("cpu", "vllm-cpu", "c8g.4xlarge"),
        ("gpu", "vllm-gpu", "g6e.12xlarge"),
        ("neuron", "vllm-neuron", "trn1.2xlarge"),
    ],
)
def test_pod_lands_on_its_tiers_nodepool_the_infra_defines(
    kubeconfig: Path, tier: str, runtime: str, instance_type: str
) -> None:
    """The rendered NodePool of the pod's tier: its name, architecture and family admit the pod, and the pod
    tolerates every taint it sets (a pod that misses one never gets a node)."""
    from tests.support.infra import render_karpenter

    nodepool = render_karpenter("NodePool", tier)
    pod = render(kubeconfig, runtime, instance_type)
    spec = pod["spec"]
    assert spec["nodeSelector"][placement.NODEPOOL_LABEL] == nodepool["metadata"]["name"]
    requirements = {r["key"]: r["values"] for r in nodepool["spec"]["template"]["spec"]["requirements"]}
    assert spec["nodeSelector"][placement.ARCH_LABEL] in requirements[placement.ARCH_LABEL]
    assert instance_type.split(".")[0] in requirements["karpenter.k8s.aws/instance-family"]
    for taint in nodepool["spec"]["template"]["spec"]["taints"]:
        assert any(
            t["key"] == taint["key"] and t["value"] == taint["value"] and t["effect"] == taint["effect"]
            for t in spec["tolerations"]
        ), taint
    account = yaml.safe_load((REPO / "infra" / "k8s" / "benchmark-serviceaccount.yaml").read_text())
    assert account["metadata"]["name"] == spec["serviceAccountName"]
    assert account["metadata"]["namespace"] == pod["metadata"]["namespace"]


@pytest.mark.parametrize(
    ("runtime", "instance_type", "weights"),
    [
        ("vllm-cpu", "r8g.48xlarge", None),
        ("vllm-gpu", "g6e.xlarge", None),
        # With the node's weight cache (its init container and hostPath): a superset of the Neuron pod.
        ("vllm-neuron", "inf2.xlarge", "s3://lake-bucket/models"),
    ],
)
def test_rendered_pods_pass_checkov(
    kubeconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    runtime: str,
    instance_type: str,
    weights: str | None,
) -> None:
    from tests.support.checkov import failures, reports, run_checkov

    if weights:
        monkeypatch.setenv("ACCELBENCH_WEIGHTS_URI", weights)
    pod = render(kubeconfig, runtime, instance_type)
    assert ("weights" in {c["name"] for c in pod["spec"]["initContainers"]}) == bool(weights)
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod))
    proc = run_checkov([manifest, REPO / "infra" / "k8s" / "networkpolicy.yaml"], ["kubernetes"])
    (report,) = [r for r in reports(proc.stdout) if r.get("check_type") == "kubernetes"]
    assert report["summary"]["failed"] == 0, failures(report)
    assert report["summary"]["passed"] > 50
    skipped = {
        c["check_id"]: c["check_result"].get("suppress_comment", "")
        for c in report["results"].get("skipped_checks", [])
    }
    assert set(skipped) <= set(CHECKOV_SKIPS)
    assert all(len(reason) > 20 for reason in skipped.values()), skipped


def test_no_container_runs_through_a_shell_and_no_value_carries_a_token(
    kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Campaign values reach containers as argument lists and env values, never a shell command line;
    the worker's own credentials never reach the pod spec."""
    monkeypatch.setenv("HF_TOKEN", "hf_FAKEworkerTokenZ9y8x7")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "FAKEworkerSecretKeyQ1w2e3")
    pod = render(kubeconfig, "vllm-cpu", "m8g.xlarge")
    containers = pod["spec"]["containers"] + pod["spec"]["initContainers"]
    shells = {"sh", "bash", "/bin/sh", "/bin/bash", "-c"}
    for container in containers:
        if container["name"] == "airflow-xcom-sidecar":
            continue  # the provider's own sidecar (a fixed command, no campaign value in it)
        assert not shells & set(container.get("command") or []), container["name"]
        assert not shells & set(container.get("args") or []), container["name"]
    text = json.dumps(pod)
    assert "hf_FAKEworkerTokenZ9y8x7" not in text and "FAKEworkerSecretKeyQ1w2e3" not in text


def test_streamed_weights_are_the_servers_model_with_the_streamers_load_format(
    kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACCELBENCH_WEIGHTS_URI (issue 49): the server streams the model's folder under it with vLLM's Run:ai
    streamer, strict-valid; from an S3-compatible store with its endpoint and path-style addressing, from
    AWS with the pod's identity alone (no AWS_ variable). The matrix key stays: where the weights come from
    is not what is measured."""
    hub = render(kubeconfig, "vllm-cpu", "m8g.xlarge")
    monkeypatch.setenv("ACCELBENCH_WEIGHTS_URI", "s3://lake-bucket/models/")
    pod = render(kubeconfig, "vllm-cpu", "m8g.xlarge")
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(pod, version, strict=True)
    server = pod["spec"]["initContainers"][0]
    assert server["args"][:3] == [
        "s3://lake-bucket/models/local/tiny-llama",
        "--load-format",
        "runai_streamer",
    ]
    assert server["args"][3:] == hub["spec"]["initContainers"][0]["args"][1:]  # the rest as from the Hub
    assert not any(e["name"].startswith(("AWS_", "RUNAI_")) for e in server["env"])
    spec = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"] if "value" in e}[SPEC_ENV]
    hub_spec = {e["name"]: e["value"] for e in hub["spec"]["containers"][0]["env"] if "value" in e}[SPEC_ENV]
    from accelbench.core.server_group import ServerGroup

    streamed, pulled = (ServerGroup.model_validate_json(s).specs[0] for s in (spec, hub_spec))
    assert streamed.server.weights_uri == "s3://lake-bucket/models/local/tiny-llama"
    assert streamed.matrix_key == pulled.matrix_key and streamed.spec_id != pulled.spec_id
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")  # an S3-compatible store
    server = render(kubeconfig, "vllm-cpu", "m8g.xlarge")["spec"]["initContainers"][0]
    env = {e["name"]: e.get("value") for e in server["env"]}
    assert env["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9000"
    assert env["RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING"] == "0"


def test_a_runtime_without_the_streamer_serves_its_nodes_copy_fetched_by_an_init_container(
    kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ACCELBENCH_WEIGHTS_URI on the Neuron tier (issue 49, point 2: its DLC has no Run:ai streamer): a
    `weights` init container in the load generator's image copies the model's folder into the node's cache
    (a hostPath) before the server starts, and the server serves that copy, read-only, with no streamer
    flag; strict-valid. Without the setting the pod is as before."""
    from accelbench.k8s.pod import NODE_WEIGHTS_DIR
    from accelbench.runtime.recipes import WEIGHTS_CACHE_MOUNT

    hub = render(kubeconfig, "vllm-neuron", "inf2.xlarge")
    assert [c["name"] for c in hub["spec"]["initContainers"]] == ["server"]
    assert not any("hostPath" in v for v in hub["spec"]["volumes"])
    monkeypatch.setenv("ACCELBENCH_WEIGHTS_URI", "s3://lake-bucket/models/")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")  # an S3-compatible store: the copy's too
    pod = render(kubeconfig, "vllm-neuron", "inf2.xlarge")
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(pod, version, strict=True)
    spec = pod["spec"]
    weights, server = spec["initContainers"]  # in this order: the copy is whole before the server starts
    assert weights["name"] == "weights" and "restartPolicy" not in weights  # runs to completion
    assert server["name"] == "server" and server["restartPolicy"] == "Always"
    uri = "s3://lake-bucket/models/local/tiny-llama"
    copy = f"{WEIGHTS_CACHE_MOUNT}/lake-bucket/models/local/tiny-llama"
    assert weights["command"] == ["python", "-m", "accelbench.loadgen.weights_cache"]
    assert weights["args"] == [uri, copy]
    assert weights["image"] == spec["containers"][0]["image"]  # the load generator's image has the code
    assert {e["name"]: e["value"] for e in weights["env"]} == {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}
    assert server["args"][0] == copy and "--load-format" not in server["args"]
    assert server["args"][1:] == hub["spec"]["initContainers"][0]["args"][1:]
    assert not any(e["name"].startswith("RUNAI_") for e in server["env"])
    (cache,) = [v for v in spec["volumes"] if "hostPath" in v]
    assert cache["hostPath"] == {"path": NODE_WEIGHTS_DIR, "type": "DirectoryOrCreate"}
    mounts = {c["name"]: {m["name"]: m for m in c["volumeMounts"]} for c in (weights, server)}
    assert mounts["weights"][cache["name"]]["mountPath"] == WEIGHTS_CACHE_MOUNT
    assert not mounts["weights"][cache["name"]].get("readOnly")
    assert mounts["server"][cache["name"]] == {
        "name": cache["name"],
        "mountPath": WEIGHTS_CACHE_MOUNT,
        "readOnly": True,
    }
    assert cache["name"] not in {m["name"] for m in spec["containers"][0]["volumeMounts"]}
    sc = weights["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    _check_guaranteed(weights)
