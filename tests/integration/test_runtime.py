"""Server recipes: images, arguments and environment per tier; version sources; what each tier can run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from accelbench.catalog.db import session_scope
from accelbench.catalog.models import RuntimeVersion
from accelbench.catalog.queries import runtime_image
from accelbench.core.spec import ServerSpec
from accelbench.errors import ConfigError
from accelbench.runtime.neuron import neuron_support_problem
from accelbench.runtime.recipes import VllmCpu, VllmNeuron
from accelbench.runtime.versions import resolve_version
from accelbench.tiers import all_tiers, recipe_for


def cpu_server(**overrides) -> ServerSpec:
    fields = dict(
        runtime="vllm-cpu",
        version="0.19.1",
        image=VllmCpu().image("0.19.1"),
        model="org/m",
        served_model_name="m",
        dtype="bfloat16",
        tensor_parallel_size=2,
        kv_cache_gib=12,
        max_model_len=4096,
        instance_type="r8g.48xlarge",
        accelerator_type="cpu",
        accelerator_count=0,
        vcpu=192,
        server_cpu=190,
        server_memory_mib=1400 * 1024,
        model_weights_gib=15.0,
    )
    return ServerSpec(**(fields | overrides))


def test_registry_has_the_three_tiers() -> None:
    assert {t.runtime for t in all_tiers()} == {"vllm-cpu", "vllm-gpu", "vllm-neuron"}
    with pytest.raises(ConfigError, match="runtime='tgi'"):
        recipe_for("tgi")


def test_cpu_image_always_uses_the_arm64_tag(monkeypatch) -> None:
    cpu = recipe_for("vllm-cpu")
    assert cpu.image("0.19.1") == "vllm/vllm-openai-cpu:v0.19.1-arm64"
    assert cpu.image("v0.19.1") == "vllm/vllm-openai-cpu:v0.19.1-arm64"
    monkeypatch.setenv("ACCELBENCH_VLLM_CPU_IMAGE_REPOSITORY", "registry.internal/mirror/vllm-openai-cpu")
    assert cpu.image("0.20.0") == "registry.internal/mirror/vllm-openai-cpu:v0.20.0-arm64"
    assert recipe_for("vllm-gpu").image("0.19.1") == "vllm/vllm-openai:v0.19.1"


def test_cpu_args_and_env() -> None:
    spec = cpu_server(extra_engine_args=("--enable-prefix-caching",))
    args = VllmCpu().args(spec)
    assert args[0] == "org/m"  # ENTRYPOINT is `vllm serve`
    pairs = dict(zip(args[1::2], args[2::2], strict=False))
    assert pairs["--dtype"] == "bfloat16" and pairs["--tensor-parallel-size"] == "2"
    assert pairs["--served-model-name"] == "m"
    assert args.count("--served-model-name") == 1
    assert "--gpu-memory-utilization" not in args and "--kv-cache-dtype" not in args
    assert args[-1] == "--enable-prefix-caching"
    env = VllmCpu().env(spec)
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "6"  # 12 GiB planned, applied per rank: 2 ranks x 6 GiB
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "auto"
    assert env["VLLM_NO_USAGE_STATS"] == "1" and env["DO_NOT_TRACK"] == "1"
    assert "HF_TOKEN" not in env  # only ever from a Secret


def test_gpu_recipe_keeps_its_gpu_knobs_off_cpu() -> None:
    gpu = recipe_for("vllm-gpu")
    spec = cpu_server(
        runtime="vllm-gpu",
        accelerator_type="gpu",
        accelerator_count=8,
        dtype="auto",
        gpu_memory_utilization=0.85,
    )
    args = gpu.args(spec)
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.85"  # the planned share, as planned
    assert "VLLM_CPU_KVCACHE_SPACE" not in gpu.env(spec)


def test_cpu_version_comes_from_the_catalog_not_the_gpu_framework(engine) -> None:
    cpu = recipe_for("vllm-cpu")
    version, source = resolve_version(engine, cpu)
    assert version == cpu.default_version and "default" in source
    now = datetime(2026, 11, 30, tzinfo=UTC)
    with session_scope(engine) as s:
        s.add_all(
            [
                RuntimeVersion(
                    runtime="vllm-gpu",
                    version="0.30.0",
                    image="vllm/vllm-openai:v0.30.0",
                    discovered_at=now,
                    status="discovered",
                ),
                RuntimeVersion(
                    runtime="vllm-cpu",
                    version="0.9.2",
                    image=cpu.image("0.9.2"),
                    discovered_at=now,
                    status="benchmarked",
                ),
                RuntimeVersion(
                    runtime="vllm-cpu",
                    version="0.19.1",
                    image=cpu.image("0.19.1"),
                    discovered_at=now,
                    status="discovered",
                ),
                RuntimeVersion(
                    runtime="vllm-cpu",
                    version="0.21.0",
                    image=cpu.image("0.21.0"),
                    discovered_at=now,
                    status="failed",
                ),
            ]
        )
    assert resolve_version(engine, cpu) == ("0.19.1", "catalog runtime_versions (vllm-cpu)")
    with session_scope(engine) as s:
        s.add(
            RuntimeVersion(
                runtime="vllm-cpu",
                version="0.20.0",
                image=cpu.image("0.20.0"),
                discovered_at=datetime(2026, 12, 7, tzinfo=UTC),
                status="discovered",
            )
        )
    assert resolve_version(engine, cpu)[0] == "0.20.0"
    # a run for an earlier logical date uses the version that was current then
    assert resolve_version(engine, cpu, as_of=datetime(2026, 12, 1, tzinfo=UTC))[0] == "0.19.1"
    with session_scope(engine) as s:  # found today, released long ago: counts for old dates too
        s.add(
            RuntimeVersion(
                runtime="vllm-cpu",
                version="0.19.5",
                image=cpu.image("0.19.5"),
                discovered_at=now,
                released_at=datetime(2026, 1, 1, tzinfo=UTC),
                status="discovered",
            )
        )
        s.add(
            RuntimeVersion(
                runtime="vllm-cpu",
                version="0.21.0rc1",
                image=cpu.image("0.21.0rc1"),
                discovered_at=now,
                status="discovered",
            )
        )
    assert resolve_version(engine, cpu, as_of=datetime(2026, 12, 1, tzinfo=UTC))[0] == "0.19.5"
    assert resolve_version(engine, cpu)[0] == "0.20.0"  # pre-releases never become the default


NEURON_REPOSITORY = "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx"


def neuron_server(version: str, **overrides) -> ServerSpec:
    """inf2.24xlarge: 6 Inferentia2 devices, TP = 6 x 2 NeuronCores, a batch of 8 compiled in."""
    fields = dict(
        runtime="vllm-neuron",
        version=version,
        image=f"{NEURON_REPOSITORY}:{version}-neuronx",
        dtype="bfloat16",
        tensor_parallel_size=12,
        kv_cache_gib=0,
        instance_type="inf2.24xlarge",
        accelerator_type="neuron",
        accelerator_count=6,
        vcpu=96,
        server_cpu=90,
        server_memory_mib=350 * 1024,
        max_num_seqs=8,
    )
    return cpu_server(**(fields | overrides))


def test_every_tier_starts_vllm_serve_whatever_its_image_entrypoint() -> None:
    # The GPU image's ENTRYPOINT has been `python3 -m vllm.entrypoints.openai.api_server` (ignores a leading
    # model argument) and the Neuron DLC's runs its arguments as a command: the pod names `vllm serve`.
    assert {r.runtime: r.container_command() for r in (t.recipe for t in all_tiers())} == {
        "vllm-cpu": ["vllm", "serve"],
        "vllm-gpu": ["vllm", "serve"],
        "vllm-neuron": ["vllm", "serve"],
    }


def test_neuron_image_comes_from_the_recorded_tag_which_names_the_sdk(monkeypatch) -> None:
    neuron = recipe_for("vllm-neuron")
    recorded = f"{NEURON_REPOSITORY}:0.21.0.1.0.0-neuronx-py313-sdk2.31.0-ubuntu24.04"
    assert neuron.image("0.21.0", recorded) == recorded
    assert neuron.image("0.21.0", recorded + "@sha256:" + "a" * 64) == recorded  # the tag, not the digest
    # Before any discovery only the default version is known, with a published tag of the 0.16 line.
    assert neuron.default_version == "0.16.0"
    assert neuron.image("0.16.0") == f"{NEURON_REPOSITORY}:0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04"
    with pytest.raises(
        ConfigError, match=r"neuron_version='0.21.0': .*run release discovery .* or give the image"
    ):
        neuron.image("0.21.0")
    monkeypatch.setenv(
        "ACCELBENCH_VLLM_NEURON_IMAGE_REPOSITORY", "registry.internal:5000/mirror/vllm-neuronx"
    )
    assert neuron.image("0.21.0", recorded) == (
        "registry.internal:5000/mirror/vllm-neuronx:0.21.0.1.0.0-neuronx-py313-sdk2.31.0-ubuntu24.04"
    )  # a mirror keeps the recorded tag
    # CPU and GPU compute their tag from the version: a recorded image changes nothing.
    assert recipe_for("vllm-gpu").image("0.19.1", "elsewhere/vllm:v0.19.1") == "vllm/vllm-openai:v0.19.1"


def test_runtime_image_is_what_discovery_recorded(engine) -> None:
    assert runtime_image(engine, "vllm-neuron", "0.16.0") == (None, None)
    image = f"{NEURON_REPOSITORY}:0.16.0-neuronx-py312-sdk2.30.0-ubuntu24.04"
    with session_scope(engine) as s:
        s.add(
            RuntimeVersion(
                runtime="vllm-neuron",
                version="0.16.0",
                image=image,
                digest="sha256:" + "b" * 64,
                discovered_at=datetime(2026, 12, 1, tzinfo=UTC),
                status="discovered",
            )
        )
    assert runtime_image(engine, "vllm-neuron", "0.16.0") == (image, "sha256:" + "b" * 64)
    assert runtime_image(engine, "vllm-gpu", "0.16.0") == (None, None)  # per runtime
    assert VllmNeuron().image("0.16.0", runtime_image(engine, "vllm-neuron", "0.16.0")[0]) == image


@pytest.mark.parametrize(
    ("version", "line_args", "env"),
    [
        # vLLM V0 fork on NxD Inference: --device neuron and the framework chosen by env.
        ("0.9.1", ["--device", "neuron"], {"VLLM_NEURON_FRAMEWORK": "neuronx-distributed-inference"}),
        # vLLM V1 + vllm-neuron on NxD Inference: --device is gone (vLLM 0.10), prefix caching off.
        ("0.11.0", ["--no-enable-prefix-caching"], {}),
        ("0.16.0", ["--no-enable-prefix-caching"], {}),
        # vllm-neuron 1.x (Trn2/Trn3): no EFA in a benchmark pod.
        ("0.21.0", [], {"NEURON_SKIP_EFA_AFFINITY": "1"}),
        ("0.29.0", [], {"NEURON_SKIP_EFA_AFFINITY": "1"}),
    ],
)
def test_neuron_args_and_env_per_dlc_line(version: str, line_args: list[str], env: dict[str, str]) -> None:
    neuron = recipe_for("vllm-neuron")
    spec = neuron_server(version, extra_engine_args=("--enable-chunked-prefill",))
    args = neuron.args(spec)
    assert args[0] == "org/m" and args[-1] == "--enable-chunked-prefill"
    pairs = dict(zip(args[1::2], args[2::2], strict=False))
    assert pairs["--tensor-parallel-size"] == "12"  # NeuronCores: 6 devices x 2
    assert pairs["--max-num-seqs"] == "8"  # the compiled batch, as planned
    tier = args[args.index("--max-num-seqs") + 2 : -1]
    assert tier == line_args
    assert ("--device" in args) == (version == "0.9.1")
    assert "--gpu-memory-utilization" not in args and "--block-size" not in args
    got = neuron.env(spec)
    assert {k: v for k, v in got.items() if k not in ("VLLM_NO_USAGE_STATS", "DO_NOT_TRACK")} == env
    assert "VLLM_CPU_KVCACHE_SPACE" not in got and "NEURON_RT_VISIBLE_CORES" not in got


def test_a_neuron_server_without_its_compiled_batch_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"max_num_seqs=None: .*compiles the model for a fixed batch"):
        recipe_for("vllm-neuron").args(neuron_server("0.16.0", max_num_seqs=None))


@pytest.mark.parametrize(
    ("family", "version", "problem"),
    [
        ("inf2", "0.16.0", None),
        ("trn1", "0.9.1", None),
        ("inf2", "0.21.0", "inf2 (NeuronCore-v2) cannot run the vLLM 0.21.0 Neuron DLC"),
        ("trn1", "v0.29.0", "trn1 (NeuronCore-v2) cannot run the vLLM v0.29.0 Neuron DLC"),
        ("trn2", "0.29.0", None),  # the 0.21+ DLCs target Trn2/Trn3
        ("inf1", "0.16.0", "inf1 (Inferentia1, NeuronCore-v1) cannot run vLLM"),
        ("inf2", "latest", "'latest' is not a vLLM version"),
    ],
)
def test_neuron_support_problem(family: str, version: str, problem: str | None) -> None:
    found = neuron_support_problem(family, version)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem)
    if found and "(NeuronCore-v2)" in found:
        assert "newest line for Inf2 and Trn1 is the vLLM 0.16 DLC" in found
    assert recipe_for("vllm-neuron").support_problem(family, version) == found
    assert recipe_for("vllm-gpu").support_problem(family, version) is None


def test_neuron_version_is_the_newest_the_families_can_run(engine) -> None:
    neuron = recipe_for("vllm-neuron")
    assert (
        resolve_version(engine, neuron, instance_families=["inf2"])[0] == "0.16.0"
    )  # the default: none known
    now = datetime(2026, 12, 1, tzinfo=UTC)
    with session_scope(engine) as s:
        for version in ("0.29.0", "0.21.0"):
            s.add(
                RuntimeVersion(
                    runtime="vllm-neuron",
                    version=version,
                    image=f"{NEURON_REPOSITORY}:{version}",
                    discovered_at=now,
                    status="discovered",
                )
            )
    assert resolve_version(engine, neuron) == ("0.29.0", "catalog runtime_versions (vllm-neuron)")
    version, source = resolve_version(engine, neuron, instance_families=["inf2", "trn1"])
    assert (version, "default" in source) == ("0.16.0", True)  # only Trn2/Trn3 lines known
    with session_scope(engine) as s:
        for version in ("0.13.0", "0.16.0"):
            s.add(
                RuntimeVersion(
                    runtime="vllm-neuron",
                    version=version,
                    image=f"{NEURON_REPOSITORY}:{version}",
                    discovered_at=now,
                    status="discovered",
                )
            )
    assert resolve_version(engine, neuron, instance_families=["trn1"]) == (
        "0.16.0",
        "catalog runtime_versions (vllm-neuron)",
    )
    assert resolve_version(engine, neuron, instance_families=["trn2"])[0] == "0.29.0"


def test_gpu_default_version_is_a_published_image() -> None:
    gpu = recipe_for("vllm-gpu")
    assert gpu.image(gpu.default_version) == "vllm/vllm-openai:v0.18.0"
