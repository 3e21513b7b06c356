"""The benchmark pod, as Kubernetes client objects: vLLM server sidecar + load-generator main container.

Kept free of Airflow: accelbench.airflow.benchmark_pod hands these parts to KubernetesPodOperator.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from kubernetes.client import models as k8s

from accelbench import __version__
from accelbench.config import (
    LAKE_SETTING,
    MODE_SETTING,
    S3_ENDPOINT_SETTINGS,
    Settings,
    env_name,
    setting_default,
)
from accelbench.core.server_group import ServerGroup
from accelbench.k8s import placement
from accelbench.loadgen.contract import DEV_MODE_ENV, NODE_NAME_ENV, SERVER_URL_ENV, SPEC_ENV
from accelbench.runtime.recipes import SERVER_PORT, WEIGHTS_CACHE_MOUNT, cached_weights
from accelbench.sizing.fit import LOADGEN_CPU, loadgen_memory
from accelbench.tiers import tier
from accelbench.tiers.base import Tier

LOADGEN_IMAGE_SETTING = env_name("loadgen_image")
# Pinned: it must not change with the server version under test (deltas measure the server).
DEFAULT_LOADGEN_IMAGE = f"accelbench/loadgen:{__version__}"
HF_SECRET_SETTING = env_name("hf_token_secret")
DEFAULT_HF_SECRET = str(setting_default("hf_token_secret"))
LOADGEN_HF_HOME = "/tmp/hf"  # the tokenizer of `vllm bench serve` is fetched here (read-only root fs)
PROBE_PERIOD_S = 10
# Start-up budget: process start + engine init, plus model load at a conservative 10 s per GiB
# (weights read from the image/volume and repacked for the CPU kernels).
STARTUP_BASE_S = 180
STARTUP_PER_GIB_S = 10
# Accelerated servers also compile before they answer /health: each tier's Startup allowance
# (accelbench.tiers).
HF_TOKEN_DIR = "/var/run/secrets/huggingface"
LOADGEN_UID = 10001
# Checks of checkov that a benchmark pod fails on purpose, each with the reason (pod annotations).
CHECKOV_SKIPS = {
    "CKV_K8S_8": "no liveness probe: a restart in the middle of a load level would corrupt the measurement; "
    "the server has startup and readiness probes and the run fails instead",
    "CKV_K8S_9": "the load generator is a run-to-completion job with no endpoint to probe; the server "
    "sidecar has a readiness probe",
    "CKV_K8S_25": "the vLLM CPU server adds SYS_NICE (all else dropped) for NUMA memory-policy syscalls",
    "CKV_K8S_22": "the vLLM server writes compile and model caches under its home; the load generator's root "
    "filesystem is read-only",
    "CKV_K8S_40": "the upstream vLLM image runs as root; the load generator runs as UID 10001",
    "CKV_K8S_43": "images are pinned by version tag; the digest is used once discovery has recorded it",
}
NODE_LAUNCH_S = int(setting_default("pod_schedule_timeout_s"))  # Karpenter launch + node ready
SCHEDULE_TIMEOUT_SETTING = env_name("pod_schedule_timeout_s")
IMAGE_PULL_S = 900  # multi-GB vLLM images on a fresh node
# The node's weight cache (a runtime without the streamer, ACCELBENCH_WEIGHTS_URI set): a hostPath folder that
# outlives the pod and lives as long as the node (Karpenter's nodes are replaced, not reused across types).
NODE_WEIGHTS_DIR = "/var/lib/accelbench/weights"
WEIGHTS_CONTAINER = "weights"
WEIGHTS_MEMORY_MIB = 512  # the copy streams each object to disk


@dataclass(frozen=True)
class PodParts:
    """Everything the operator needs; names follow KubernetesPodOperator's parameters."""

    name: str
    namespace: str
    server: k8s.V1Container
    # Runs before the server, where its runtime cannot stream its weights: their copy into the node's cache.
    weights: k8s.V1Container | None
    loadgen_image: str
    loadgen_cmds: list[str]
    loadgen_env: list[k8s.V1EnvVar]
    loadgen_resources: k8s.V1ResourceRequirements
    loadgen_security_context: k8s.V1SecurityContext
    volumes: list[k8s.V1Volume]
    volume_mounts: list[k8s.V1VolumeMount]
    node_selector: dict[str, str]
    tolerations: list[k8s.V1Toleration]
    labels: dict[str, str]
    annotations: dict[str, str]
    pod_spec: k8s.V1Pod
    schedule_timeout_s: int
    startup_timeout_s: int


def guaranteed(cpu: str, memory: str, extra: dict[str, str] | None = None) -> k8s.V1ResourceRequirements:
    """requests == limits for every resource: Guaranteed QoS, exclusive cores under the static CPU manager."""
    values = {"cpu": cpu, "memory": memory, **(extra or {})}
    return k8s.V1ResourceRequirements(requests=dict(values), limits=dict(values))


def startup_failure_threshold(weights_gib: float, accelerator_type: str = "cpu") -> int:
    """Probes before the server counts as failed to start: process start, model load and, on an accelerator,
    its compilation (the tier's allowance)."""
    budget = (
        STARTUP_BASE_S
        + STARTUP_PER_GIB_S * weights_gib
        + tier(accelerator_type).startup.compile_s(weights_gib)
    )
    return math.ceil(budget / PROBE_PERIOD_S)


def _tolerations(of: Tier) -> list[k8s.V1Toleration]:
    taints = of.placement.taints
    return [k8s.V1Toleration(key=t.key, operator="Equal", value=t.value, effect=t.effect) for t in taints]


def _device_resources(of: Tier, count: int) -> dict[str, str]:
    resource = of.placement.device_resource
    return {resource: str(count)} if resource else {}  # never a GPU or Neuron device on a CPU pod


def server_container(group: ServerGroup) -> k8s.V1Container:
    s = group.server
    of = tier(s.accelerator_type)
    recipe = of.recipe
    # Several workloads: vLLM's development API, for its prefix-cache reset between them (the namespace's
    # NetworkPolicy denies ingress: only the pod's own load generator reaches it).
    dev = DEV_MODE_ENV if len(group.specs) > 1 else {}
    env = [k8s.V1EnvVar(name=k, value=v) for k, v in sorted((recipe.env(s) | dev).items())]
    # The token is read from a mounted Secret file (huggingface_hub reads HF_TOKEN_PATH), never an env value.
    env.append(k8s.V1EnvVar(name="HF_TOKEN_PATH", value=f"{HF_TOKEN_DIR}/token"))
    health = k8s.V1HTTPGetAction(path="/health", port="http")
    capabilities = k8s.V1Capabilities(drop=["ALL"], add=list(of.security.add_capabilities) or None)
    return k8s.V1Container(
        name="server",
        image=s.image + (f"@{s.image_digest}" if s.image_digest else ""),
        command=recipe.container_command(),  # whatever the image's ENTRYPOINT (recipes.py says why)
        args=recipe.args(s, host="0.0.0.0", port=SERVER_PORT),
        env=env,
        ports=[k8s.V1ContainerPort(name="http", container_port=SERVER_PORT, protocol="TCP")],
        restart_policy="Always",  # a native sidecar: the main container starts once the probe passes
        startup_probe=k8s.V1Probe(
            http_get=health,
            period_seconds=PROBE_PERIOD_S,
            timeout_seconds=5,
            failure_threshold=startup_failure_threshold(s.model_weights_gib, s.accelerator_type),
        ),
        readiness_probe=k8s.V1Probe(
            http_get=health, period_seconds=PROBE_PERIOD_S, timeout_seconds=5, failure_threshold=3
        ),
        resources=guaranteed(
            str(s.server_cpu),
            f"{s.server_memory_mib}Mi",
            _device_resources(of, s.accelerator_count),
        ),
        security_context=k8s.V1SecurityContext(
            capabilities=capabilities,
            allow_privilege_escalation=False,
            # The tier's: the CPU server's NUMA memory-policy syscalls (mbind, set_mempolicy) need
            # Unconfined; the namespace is PSA privileged for this container only (infra/k8s/namespace.yaml).
            seccomp_profile=k8s.V1SeccompProfile(type=of.security.seccomp),
        ),
        image_pull_policy="Always",
        volume_mounts=[
            k8s.V1VolumeMount(name="dshm", mount_path="/dev/shm"),
            k8s.V1VolumeMount(name="hf-token", mount_path=HF_TOKEN_DIR, read_only=True),
            *(
                [k8s.V1VolumeMount(name=WEIGHTS_CONTAINER, mount_path=WEIGHTS_CACHE_MOUNT, read_only=True)]
                if recipe.node_cached(s)
                else []
            ),
        ],
    )


def weights_container(group: ServerGroup, image: str) -> k8s.V1Container | None:
    """The init container that copies the server's weights into its node's cache once per node
    (accelbench.loadgen.weights_cache), in the load generator's image, with the pod's identity. It runs as
    root only to write the hostPath folder (root's, as the kubelet creates it), every capability dropped."""
    s = group.server
    if not tier(s.accelerator_type).recipe.node_cached(s) or s.weights_uri is None:
        return None
    endpoint = [
        k8s.V1EnvVar(name=name, value=os.environ[name])
        for name in S3_ENDPOINT_SETTINGS
        if os.environ.get(name)
    ]
    return k8s.V1Container(
        name=WEIGHTS_CONTAINER,
        image=image,
        command=["python", "-m", "accelbench.loadgen.weights_cache"],
        args=[s.weights_uri, cached_weights(s.weights_uri)],
        env=endpoint or None,
        resources=guaranteed(str(LOADGEN_CPU), f"{WEIGHTS_MEMORY_MIB}Mi"),
        security_context=k8s.V1SecurityContext(
            capabilities=k8s.V1Capabilities(drop=["ALL"]),
            allow_privilege_escalation=False,
            run_as_user=0,
            run_as_non_root=False,
            read_only_root_filesystem=True,
            seccomp_profile=k8s.V1SeccompProfile(type="RuntimeDefault"),
        ),
        image_pull_policy="Always",
        volume_mounts=[k8s.V1VolumeMount(name=WEIGHTS_CONTAINER, mount_path=WEIGHTS_CACHE_MOUNT)],
    )


def loadgen_env(group: ServerGroup, lake_uri: str | None) -> list[k8s.V1EnvVar]:
    """The server's workloads (their specs), where the server is, where the raw evidence goes, and the
    tokenizer's cache and token."""
    env = [
        k8s.V1EnvVar(name=SPEC_ENV, value=group.model_dump_json()),
        k8s.V1EnvVar(name=SERVER_URL_ENV, value=f"http://127.0.0.1:{SERVER_PORT}"),
        k8s.V1EnvVar(name=MODE_SETTING, value="kubernetes"),
        k8s.V1EnvVar(
            name=NODE_NAME_ENV,
            value_from=k8s.V1EnvVarSource(field_ref=k8s.V1ObjectFieldSelector(field_path="spec.nodeName")),
        ),
        k8s.V1EnvVar(name="HF_HOME", value=LOADGEN_HF_HOME),
        k8s.V1EnvVar(name="HF_TOKEN_PATH", value=f"{HF_TOKEN_DIR}/token"),
    ]
    if lake_uri:
        env.append(k8s.V1EnvVar(name=LAKE_SETTING, value=lake_uri))
        # An S3-compatible lake outside AWS: the pod needs the same endpoint as the workers.
        env += [
            k8s.V1EnvVar(name=name, value=os.environ[name])
            for name in S3_ENDPOINT_SETTINGS
            if os.environ.get(name)
        ]
    return env


def build_pod_parts(
    group: ServerGroup, namespace: str = placement.BENCHMARK_NAMESPACE, lake_uri: str | None = None
) -> PodParts:
    s = group.server
    of = tier(s.accelerator_type)
    shm_gib = max(1, min(16, s.server_memory_mib // 4096))
    weights_gib = s.model_weights_gib
    # The load generator runs the workloads one after another: the largest one's memory (a spec with a
    # quality plan also runs lm-eval after its levels).
    memory = max(loadgen_memory(spec.load, quality=spec.quality is not None) for spec in group.specs)
    loadgen_image = Settings.from_env("loadgen_image").kubernetes.loadgen_image or DEFAULT_LOADGEN_IMAGE
    weights = weights_container(group, loadgen_image)
    cache = [
        k8s.V1Volume(
            name=WEIGHTS_CONTAINER,
            host_path=k8s.V1HostPathVolumeSource(path=NODE_WEIGHTS_DIR, type="DirectoryOrCreate"),
        )
    ]
    return PodParts(
        name=f"accelbench-{group.group_id}",
        namespace=namespace,
        server=server_container(group),
        weights=weights,
        loadgen_image=loadgen_image,
        loadgen_cmds=["accelbench-loadgen"],
        loadgen_env=loadgen_env(group, lake_uri),
        loadgen_resources=guaranteed(str(LOADGEN_CPU), f"{memory}Mi"),
        loadgen_security_context=k8s.V1SecurityContext(
            capabilities=k8s.V1Capabilities(drop=["ALL"]),
            allow_privilege_escalation=False,
            run_as_non_root=True,
            run_as_user=LOADGEN_UID,
            read_only_root_filesystem=True,
            seccomp_profile=k8s.V1SeccompProfile(type="RuntimeDefault"),
        ),
        volumes=[
            k8s.V1Volume(
                name="dshm", empty_dir=k8s.V1EmptyDirVolumeSource(medium="Memory", size_limit=f"{shm_gib}Gi")
            ),
            k8s.V1Volume(name="tmp", empty_dir=k8s.V1EmptyDirVolumeSource(size_limit="1Gi")),
            k8s.V1Volume(
                name="hf-token",
                secret=k8s.V1SecretVolumeSource(
                    secret_name=Settings.from_env("hf_token_secret").kubernetes.hf_token_secret,
                    optional=True,  # public models need no token
                    default_mode=0o440,
                ),
            ),
            *(cache if weights is not None else []),
        ],
        volume_mounts=[
            k8s.V1VolumeMount(name="tmp", mount_path="/tmp"),
            k8s.V1VolumeMount(name="hf-token", mount_path=HF_TOKEN_DIR, read_only=True),
        ],
        node_selector={
            placement.ARCH_LABEL: of.placement.architecture,
            placement.INSTANCE_TYPE_LABEL: s.instance_type,
            placement.NODEPOOL_LABEL: of.placement.nodepool,
        },
        tolerations=_tolerations(of),
        labels={
            "app.kubernetes.io/name": "accelbench-benchmark",
            "accelbench.io/runtime": s.runtime,
            "accelbench.io/group-id": group.group_id,
        },
        annotations={
            placement.DO_NOT_DISRUPT: "true",
            **{
                f"checkov.io/skip{i}": f"{check}={why}"
                for i, (check, why) in enumerate(CHECKOV_SKIPS.items(), 1)
            },
        },
        pod_spec=k8s.V1Pod(
            spec=k8s.V1PodSpec(
                containers=[],
                share_process_namespace=True,
                enable_service_links=False,
                # Volumes (the HF token Secret at 0440, /tmp) belong to the load generator's group too.
                security_context=k8s.V1PodSecurityContext(fs_group=LOADGEN_UID),
            )
        ),
        schedule_timeout_s=schedule_timeout_s(),
        startup_timeout_s=IMAGE_PULL_S
        + (STARTUP_PER_GIB_S * math.ceil(weights_gib) if weights is not None else 0)  # the node's copy
        + startup_failure_threshold(weights_gib, s.accelerator_type) * PROBE_PERIOD_S,
    )


def schedule_timeout_s() -> int:
    """How long a benchmark pod may wait for a node (ACCELBENCH_POD_SCHEDULE_TIMEOUT_S, default 600)."""
    return Settings.from_env("pod_schedule_timeout_s").kubernetes.pod_schedule_timeout_s


def unscheduled_message(parts: PodParts, instance_type: str, waited_s: int, said: str | None) -> str:
    """Why a benchmark pod found no node, with what it asked for: what to check in the NodePool."""
    selector = parts.node_selector
    pool = selector.get(placement.NODEPOOL_LABEL, "?")
    tolerations = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in parts.tolerations) or "none"
    wanted = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
    said = said or "nothing (no PodScheduled condition)"
    return (
        f"benchmark pod {parts.namespace}/{parts.name} for {instance_type} was not scheduled within "
        f"{waited_s} s: no node of the Karpenter NodePool {pool} took it. The pod selects {wanted} and "
        f"tolerates {tolerations}. The scheduler said: {said}. Check the NodePool {pool}: its limits "
        "(cpu, memory) against the nodes it runs, its instance requirements (families, "
        "karpenter.k8s.aws/instance-cpu) against this type, and its taints against these tolerations."
    )
