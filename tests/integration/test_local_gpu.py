"""Local mode on a GPU host: GPU types are served by the CUDA vLLM environment where nvidia-smi lists a GPU,
and refused in planning, naming the type and why, where it does not. No GPU here: nvidia-smi is a stand-in
script printing what the real one prints for `--query-gpu=name,memory.total,driver_version
--format=csv,noheader,nounits` (the query accelbench.tiers.gpu sends), and the CUDA environment's
interpreter is the CPU one's (both answer the same version probe)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from accelbench.campaign.plan import plan_campaign
from accelbench.campaign.prepare import ModeChecks, prepare_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.seed import upsert_instance_types
from accelbench.core.problems import PlanningError
from accelbench.errors import ConfigError
from accelbench.local.executor import check_local_devices
from accelbench.local.server import local_runtime, local_vllm_version, vllm_python
from accelbench.sizing.model_config import load_model_shape
from accelbench.tiers import load_seed
from accelbench.tiers.gpu import describe_gpus, gpus

from tests.support.gpus import H100S, NO_DRIVER, fake_nvidia_smi
from tests.support.paths import REPO
from tests.support.planning import CATALOG, STORE
from tests.support.servers import missing
from tests.support.steps import wait_for


@pytest.fixture
def cpu_vllm() -> Path:
    wait_for("vllm-env", "the vLLM CPU environment .venv-vllm")  # test.sh may still be building it
    try:
        return vllm_python()
    except ConfigError:
        missing("the vLLM CPU environment (.venv-vllm; scripts/vllm-env.sh)")
        raise


def test_gpus_are_read_from_nvidia_smi(tmp_path: Path) -> None:
    found = gpus(str(fake_nvidia_smi(tmp_path / "two", H100S)))
    assert [(g.name, g.memory_mib) for g in found] == [("NVIDIA H100 80GB HBM3", 81559)] * 2
    assert describe_gpus(found) == "2 x NVIDIA H100 80GB HBM3 (81559 MiB), driver 570.124.06"
    assert gpus(str(fake_nvidia_smi(tmp_path / "broken", NO_DRIVER, rc=9))) == []
    assert gpus(str(tmp_path / "absent")) == [] and describe_gpus([]) is None


def test_a_gpu_worker_serves_gpu_types_from_the_cuda_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu_vllm: Path
) -> None:
    monkeypatch.setenv("ACCELBENCH_VLLM_GPU_PYTHON", str(cpu_vllm))
    monkeypatch.setenv("PATH", f"{fake_nvidia_smi(tmp_path / 'bin', H100S).parent}:{os.environ['PATH']}")
    assert local_runtime("vllm-gpu") == (local_vllm_version(cpu_vllm), str(cpu_vllm))


def test_without_a_gpu_or_its_environment_local_mode_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu_vllm: Path
) -> None:
    monkeypatch.setenv("PATH", f"{fake_nvidia_smi(tmp_path / 'bin', NO_DRIVER, rc=9).parent}:/usr/bin:/bin")
    monkeypatch.setenv("ACCELBENCH_VLLM_GPU_PYTHON", str(cpu_vllm))
    with pytest.raises(ConfigError, match="nvidia-smi lists none here"):
        local_runtime("vllm-gpu")
    monkeypatch.setenv("ACCELBENCH_VLLM_GPU_PYTHON", str(tmp_path / "nothing" / "python"))
    with pytest.raises(ConfigError, match="ACCELBENCH_VLLM_GPU_PYTHON"):
        local_runtime("vllm-gpu")
    with pytest.raises(ConfigError, match="kubernetes mode only"):
        local_runtime("vllm-neuron")


def test_local_planning_names_each_type_this_worker_cannot_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu_vllm: Path
) -> None:
    """A local campaign over CPU, GPU and Neuron types on a worker without a GPU: the GPU and Neuron types are
    refused together, each naming its index and the reason; with a GPU (and the CUDA environment) the GPU
    type plans at the CUDA environment's version."""
    engine = make_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate(engine)
    upsert_instance_types(engine, load_seed())
    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", STORE)
    monkeypatch.setenv("ACCELBENCH_VLLM_GPU_PYTHON", str(cpu_vllm))
    monkeypatch.setenv("PATH", f"{fake_nvidia_smi(tmp_path / 'bin', NO_DRIVER, rc=9).parent}:/usr/bin:/bin")
    checks = ModeChecks(local_vllm=local_runtime, kubernetes_problems=lambda model: pytest.fail("local mode"))
    request = CampaignRequest(
        instance_types=["m8g.xlarge", "g6e.xlarge", "inf2.xlarge"],
        model="Qwen/Qwen2.5-0.5B-Instruct",
        execution_mode="local",
    )
    with pytest.raises(PlanningError) as err:
        prepare_campaign(request, engine, "c-local", checks)
    found = {p.field: p.message for p in err.value.problems}
    assert set(found) == {"instance_types[1]", "instance_types[2]"}, found
    assert "nvidia-smi lists none here" in found["instance_types[1]"]
    assert "kubernetes mode only" in found["instance_types[2]"]
    monkeypatch.setenv("PATH", f"{fake_nvidia_smi(tmp_path / 'gpu', H100S).parent}:/usr/bin:/bin")
    request = request.model_copy(update={"instance_types": ["m8g.xlarge", "g6e.xlarge"]})
    planned = prepare_campaign(request, engine, "c-local", checks)
    servers = {s.server.instance_type: s.server for s in planned.specs}
    version = local_vllm_version(cpu_vllm)
    assert (servers["g6e.xlarge"].runtime, servers["g6e.xlarge"].version) == ("vllm-gpu", version)
    assert servers["m8g.xlarge"].runtime == "vllm-cpu" and planned.version == version


def test_a_gpu_spec_needs_as_many_local_gpus_as_its_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    req = CampaignRequest(instance_types=["g6e.48xlarge"], model="meta-llama/Llama-3.1-8B-Instruct")
    spec = plan_campaign(req, CATALOG, "0.32.0", "c", lambda m: load_model_shape(m, STORE)).specs[0]
    assert spec.server.tensor_parallel_size == 8
    monkeypatch.setenv("PATH", f"{fake_nvidia_smi(tmp_path / 'bin', H100S).parent}:/usr/bin:/bin")
    with pytest.raises(ConfigError) as err:
        check_local_devices(spec)
    assert err.value.field == "tensor_parallel_size"
    assert "this worker has 2 x NVIDIA H100 80GB HBM3" in str(err.value)


def test_the_gpu_environment_script_installs_the_cpu_environments_vllm_version() -> None:
    """One vLLM release on both tiers by default, so local CPU and GPU rows compare the same server code."""
    script = (REPO / "scripts" / "vllm-gpu-env.sh").read_text()
    assert "sed -n 's/^VLLM_CPU_VERSION=//p' scripts/vllm-env.sh" in script
    assert 'env_install "$python" "vllm==$version"' in script
