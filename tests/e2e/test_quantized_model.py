"""Quantized serving for real (issue 30, its first part): a W8A8 checkpoint of the real model made here by
llmcompressor (PyPI, one-shot, data-free), with its provenance; served by vLLM CPU in a local run, whose lake
rows name it by its own id and record what the server's log said it served."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from accelbench.core.model_origin import PROVENANCE_FILE, model_identity
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import RawLocation
from accelbench.lake.store import Lake
from accelbench.local import quantized_model as qm
from accelbench.local import real_model as rm
from accelbench.local.executor import run_local

from tests.support.paths import REPO
from tests.support.servers import missing
from tests.support.steps import wait_for

DATE = "2026-12-03"


@pytest.fixture(scope="module")
def quant_python() -> Path:
    """The quantization environment (scripts/quant-env.sh), which test.sh creates."""
    wait_for("quant-env", "llmcompressor in .venv-quant")
    python = REPO / qm.ENV_FOLDER / "bin" / "python"
    if not python.is_file():
        missing(f"the quantization environment {qm.ENV_FOLDER} ({qm.INSTALLER})")
    return python


def _tensors(path: Path) -> dict[str, dict]:
    """A safetensors file's header (its tensors' dtypes and shapes), read by the format's own rule: an
    8-byte little-endian length, then that much JSON."""
    with path.open("rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(8))
        header: dict[str, dict] = json.loads(fh.read(length))
    header.pop("__metadata__", None)
    return header


def test_w8a8_of_the_real_model_is_made_here_and_served_as_int8(
    real_model: Path, quant_python: Path, vllm_python: Path, accelbench_env: Path
) -> None:
    folder = qm.folder("w8a8", real_model, quant_python)
    assert folder == real_model.parent / f"{real_model.name}-w8a8q{qm.QUANTIZATION}"
    assert qm.folder("w8a8", real_model, quant_python) == folder  # cached: made once
    provenance = json.loads((folder / PROVENANCE_FILE).read_text())
    base_id = rm.provenance(real_model)["model_id"]
    assert provenance["base_model_id"] == base_id and provenance["model_id"] == qm.quantized_model_id(
        base_id, "w8a8"
    )
    assert (
        provenance["quantization"]["scheme"] == "W8A8"
        and provenance["quantization"]["from"] == real_model.name
    )
    assert set(provenance["quantization"]["tools"]) == set(qm.TOOLS)
    # What llmcompressor wrote is what the scheme says (the config, and the tensors themselves).
    config = json.loads((folder / "config.json").read_text())["quantization_config"]
    (group,) = config["config_groups"].values()
    assert (config["quant_method"], config["format"], config["ignore"]) == (
        "compressed-tensors",
        "int-quantized",
        ["lm_head"],
    )
    assert (group["weights"]["num_bits"], group["weights"]["strategy"], group["weights"]["dynamic"]) == (
        8,
        "channel",
        False,
    )
    assert (group["input_activations"]["strategy"], group["input_activations"]["dynamic"]) == ("token", True)
    tensors = _tensors(folder / "model.safetensors")
    q_proj, scale = (
        tensors["model.layers.0.self_attn.q_proj.weight"],
        tensors["model.layers.0.self_attn.q_proj.weight_scale"],
    )
    assert q_proj["dtype"] == "I8" and scale["shape"] == [
        q_proj["shape"][0],
        1,
    ]  # one scale per output channel
    assert tensors["model.embed_tokens.weight"]["dtype"] == "BF16"  # not a Linear: left as it was

    # Served in a local run: the lake rows name the model by its own id and say what the server's log said.
    spec = BenchmarkSpec(
        server=rm.server_spec(folder).model_copy(update={"quantization": "int8"}),
        load=LoadPlan(input_len=32, output_len=8, concurrency=(1,), prompts_per_level=4, warmups=1),
        campaign_id="quantized",
    )
    lake = Lake(str(accelbench_env / "lake"))
    result = run_local(spec, lake, DATE, attempt="a-1")
    assert result.failure is None and result.lake_error is None, result
    landed = ingest_raw(lake, RawLocation("cpu", DATE, spec.campaign_id, spec.spec_id), "manual__q", "a-1")
    assert landed is not None
    (row,) = lake.read("runs").to_pylist()
    assert (row["status"], row["completed"], row["quantization"]) == ("ok", 4, "int8")
    assert row["server_quantization"] == "CompressedTensorsW8A8Int8 (CPUInt8ScaledMMLinearKernel)"
    assert row["model"] == model_identity(str(folder)).model_id == provenance["model_id"]
    assert row["model_origin"].endswith(
        f"quantized to W8A8 by llmcompressor {provenance['quantization']['tools']['llmcompressor']}"
    )
