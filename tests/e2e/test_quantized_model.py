"""Quantized serving for real (issue 30, its first part): a W8A8 checkpoint of the real model made here by
llmcompressor (PyPI, one-shot, data-free), with its provenance; served by vLLM CPU, whose log says it ran the
int8 kernel; its next-token distributions close to the bf16 reference's (top-k KL above 0 and small, the
reference against itself ~0); a level driven against it lands rows that name it by its own id and record what
the server's log said it served."""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from accelbench.core.fidelity import fidelity
from accelbench.core.model_origin import PROVENANCE_FILE, model_identity
from accelbench.core.probe_prompts import probe_prompts
from accelbench.core.spec import BenchmarkSpec, LoadPlan
from accelbench.lake.ingest import ingest_raw
from accelbench.lake.raw import RawLocation
from accelbench.lake.store import Lake
from accelbench.loadgen.bench_client import BenchClient
from accelbench.loadgen.driver import Driver
from accelbench.loadgen.finish import finish
from accelbench.loadgen.logprobs import TOP_K, prompt_logprobs
from accelbench.local import quantized_model as qm
from accelbench.local import real_model as rm
from accelbench.local.server import LocalServer, Pinning

from tests.support.paths import REPO
from tests.support.servers import missing
from tests.support.steps import wait_for

DATE = "2026-12-03"
PROMPTS = 48  # of the project's prompt set: ~660 positions, in one batch


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


def test_w8a8_of_the_real_model_is_made_here_served_as_int8_and_stays_close_to_bf16(
    real_model: Path,
    quant_python: Path,
    vllm_python: Path,
    bench_client: BenchClient,
    accelbench_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
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

    # Its next-token distributions against the bf16 reference's, on the project's prompt set. A server's
    # first prompt_logprobs request torch.compiles a helper of vLLM's sampler (16 s here, eager mode or not):
    # these servers run without torch.compile, as their models already do (--enforce-eager).
    monkeypatch.setenv("TORCHDYNAMO_DISABLE", "1")
    prompts = probe_prompts(PROMPTS)
    with _server(real_model, vllm_python, tmp_path / "bf16") as server:
        reference = prompt_logprobs(server.url, rm.SERVED_MODEL_NAME, prompts)
        again = prompt_logprobs(server.url, rm.SERVED_MODEL_NAME, prompts[::-1])[::-1]
        assert server.reported_quantization() == "none"
    itself = fidelity(reference, again, TOP_K)  # the reference against itself, asked in another order
    # Only the batch's order differs: numerical noise (seen: 0.0007 nats, 99.4% agreement: near-ties flip).
    assert itself.mean_kl.estimate is not None and itself.mean_kl.estimate < 0.003, itself.words()
    # The shared tokens are the whole top 20, which hold most of this small model's mass, not all of it.
    assert itself.top1_agreement.estimate is not None and itself.top1_agreement.estimate > 0.97
    assert 0.5 < itself.shared_mass < 1.0, itself.words()
    # The pairing matters: prompts paired with their neighbours' distributions are far apart, and the
    # lists' small overlap says the KL bound is loose there (seen: 0.34 nats, 19% agreement, 23% shared).
    shifted = fidelity(reference, again[1:] + again[:1], TOP_K)
    assert shifted.mean_kl.estimate is not None and shifted.mean_kl.estimate > 0.1, shifted.words()
    assert shifted.top1_agreement.estimate is not None and shifted.top1_agreement.estimate < 0.5
    assert shifted.shared_mass < 0.5, shifted.words()

    # W8A8 served in a local run: the lake rows name the model by its own id and say what its log said.
    spec = BenchmarkSpec(
        server=rm.server_spec(folder).model_copy(update={"quantization": "int8"}),
        load=LoadPlan(input_len=32, output_len=8, concurrency=(1,), prompts_per_level=4, warmups=1),
        campaign_id="quantized",
    )
    with _server(folder, vllm_python, tmp_path / "w8a8") as server:
        quantized = prompt_logprobs(server.url, rm.SERVED_MODEL_NAME, prompts)
        driver = Driver(
            spec, server.url, tmp_path / "raw", vllm=str(vllm_python.parent / "vllm"), attempt="a-1"
        )
        envelope = driver.run()
        said = server.reported_quantization()
    assert said == "CompressedTensorsW8A8Int8 (CPUInt8ScaledMMLinearKernel)"
    found = fidelity(reference, quantized, TOP_K)
    # Seen here (48 prompts): top-20 KL mean 0.053 [0.045, 0.062] nats, top-1 agreement 81.6% [77.3, 85.9]:
    # data-free int8 of a 135M model moves its flat distributions more than the reference's own rounding.
    assert found.mean_kl.estimate is not None and 1e-3 < found.mean_kl.estimate < 0.2, found.words()
    assert found.top1_agreement.estimate is not None and found.top1_agreement.estimate > 0.6, found.words()
    assert found.mean_kl.low is not None and found.mean_kl.low > 10 * itself.mean_kl.estimate
    print(f"W8A8 against bf16: {found.words()}")  # the figure, in the test's output

    lake = Lake(str(accelbench_env / "lake"))
    finish(envelope, driver.spec_dir, lake, DATE, execution_mode="local", server_quantization=said)
    landed = ingest_raw(lake, RawLocation("cpu", DATE, spec.campaign_id, spec.spec_id), "manual__q", "a-1")
    assert landed is not None and envelope.failure is None
    (row,) = lake.read("runs").to_pylist()
    assert (row["status"], row["completed"], row["quantization"]) == ("ok", 4, "int8")
    assert row["server_quantization"] == said
    assert row["model"] == model_identity(str(folder)).model_id == provenance["model_id"]
    tools = provenance["quantization"]["tools"]
    assert row["model_origin"].endswith(f"quantized to W8A8 by llmcompressor {tools['llmcompressor']}")


@contextlib.contextmanager
def _server(model: Path, vllm_python: Path, work: Path) -> Iterator[LocalServer]:
    spec = rm.server_spec(model)
    with LocalServer(
        spec, work, python=vllm_python, pinning=Pinning.from_env(), startup_timeout_s=900
    ) as server:
        yield server
