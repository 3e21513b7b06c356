"""The memory fit's model arithmetic held to vLLM's own code (the installed vLLM CPU build, .venv-vllm), for
every model config in tests/data/model_configs: the KV-cache bytes per token that the CPU, GPU and Neuron fits
size the cache with, and the tensor-parallel sizes the GPU planner accepts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from accelbench.sizing.accelerator import tensor_parallel_divides
from accelbench.sizing.model_config import load_model_shape

from tests.support.paths import REPO
from tests.support.planning import STORE

FOLDERS = sorted(p for p in Path(STORE).iterdir() if (p / "config.json").is_file())


@pytest.fixture(scope="module")
def vllm_says(vllm_python: Path) -> dict[str, dict]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    out = subprocess.run(
        [str(vllm_python), str(REPO / "tests" / "support" / "vllm_probe.py"), *map(str, FOLDERS)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_kv_cache_bytes_per_token_are_vllms(vllm_says: dict[str, dict], folder: Path) -> None:
    shape = load_model_shape(folder.name.replace("--", "/"), STORE)
    assert shape.kv_bytes_per_token() == vllm_says[str(folder)]["kv_bytes_per_token"]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_tensor_parallel_sizes_we_plan_are_ones_vllm_accepts(
    vllm_says: dict[str, dict], folder: Path
) -> None:
    """Ours is vLLM's config check (heads divide evenly) plus its models' own assertion when the KV heads are
    fewer than the ranks (`tp_size % total_num_kv_heads == 0`, e.g. vllm/model_executor/models/llama.py),
    which the config check does not make: so ours is a subset, and where it is smaller, that is why."""
    shape = load_model_shape(folder.name.replace("--", "/"), STORE)
    ours = [tp for tp in range(1, 9) if tensor_parallel_divides(shape, tp)]
    theirs = vllm_says[str(folder)]["tp"]
    assert set(ours) <= set(theirs) and 1 in ours
    for tp in set(theirs) - set(ours):
        assert shape.num_kv_heads < tp and tp % shape.num_kv_heads != 0, (folder.name, tp)
