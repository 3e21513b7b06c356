"""Quantized checkpoints of the real model, made here: compressed-tensors W8A8, W4A8 and W4A16 of the bf16
folder `accelbench.local.real_model` converts, written by the field's tool (PyPI `llmcompressor`, one-shot,
data-free: round-to-nearest weights, dynamic per-token activations, no calibration set).

Cached beside the bf16 folder and keyed by it (its folder name, the scheme and this module's format), with a
provenance file that names the source folder's model, the tool and its version and the exact scheme, so a
quantized folder says what it is wherever it goes. The quantization runs in its own environment
(`scripts/quant-env.sh`: llmcompressor pins another compressed-tensors and transformers than vLLM 0.32):
    .venv-quant/bin/python -P plugins/accelbench/local/quantized_model.py SRC_DIR OUT_DIR SCHEME
and the library gets the cached folder with `folder(scheme)`.

What each scheme is (`SCHEMES`): every Linear layer but `lm_head` (tied to the embeddings, left bf16);
W8A8: int8 weights per output channel, int8 activations per token (dynamic); W4A8: int4 weights in groups
of 64 input columns (the preset's 128 does not divide the model's 576), int8 activations per token; W4A16:
the same int4 weights, bf16 activations. All symmetric. vLLM 0.32 CPU on x86 serves all three here
(`CPUInt8ScaledMMLinearKernel`, `Dynamic4bitLinearKernel`, `CPUWNA16LinearKernel`: the server's log says
which, and the lake keeps it).
"""

from __future__ import annotations

import copy
import datetime as dt
import fcntl
import importlib.metadata
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script by the quantization interpreter, which lacks accelbench
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from accelbench.core.model_origin import PROVENANCE_FILE

QUANTIZATION = 1  # part of the cache key and the model id: bump it when the output changes
QUANTIZER = "accelbench.local.quantized_model"
QUANTIZE_TIMEOUT_S = 900.0
TOOLS = ("llmcompressor", "compressed-tensors", "transformers", "torch")
ENV_FOLDER = ".venv-quant"
INSTALLER = "scripts/quant-env.sh"
GROUP_SIZE = 64  # int4 groups: divides every Linear's input width of the real model (576, 1536)
_INT8_TOKEN = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True}
_INT4_GROUP = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": GROUP_SIZE}
# The compressed-tensors config group of each scheme (llmcompressor's QuantizationModifier config_groups).
SCHEMES: dict[str, dict[str, Any]] = {
    "w8a8": {
        "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel"},
        "input_activations": _INT8_TOKEN,
    },
    "w4a8": {"weights": _INT4_GROUP, "input_activations": _INT8_TOKEN},
    "w4a16": {"weights": _INT4_GROUP},
}
IGNORED = ("lm_head",)
BASE_FIELDS = ("name", "served_model_name", "upstream", "license", "license_file")  # kept from the source

if __name__ != "__main__":  # the library; the script needs only the standard library and the tool
    from accelbench.errors import AccelbenchError

    class QuantizationError(AccelbenchError):
        """The quantization environment is missing, or the tool failed; the message carries its error."""


def quantized_model_id(base_id: str, scheme: str) -> str:
    """The id the lake rows name a quantized folder by: the source model's id with the scheme and this
    module's format on its first part, "gguf-0123456789abcdef-c1-w8a8q1/HuggingFaceTB/SmolLM2-135M-Instruct".
    Another model than its source (other weights), whose provenance names the source (`base_model_id`)."""
    first, _, rest = base_id.partition("/")
    return f"{first}-{scheme}q{QUANTIZATION}/{rest}" if rest else f"{first}-{scheme}q{QUANTIZATION}"


def cache_key(source: Path, scheme: str) -> str:
    """The cached folder's name: the source folder's (itself keyed by the GGUF's hash), the scheme and the
    format."""
    return f"{source.name}-{scheme}q{QUANTIZATION}"


def _source_provenance(source: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((source / PROVENANCE_FILE).read_text())
    return data


def quantize(source: Path, out: Path, scheme: str) -> Path:
    """Write `scheme` of the bf16 folder `source` into `out`, with its provenance last (a folder without it
    is unfinished). Quantization environment only."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local folders: nothing may come from a model hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from llmcompressor import oneshot  # type: ignore[import-not-found]  # only in the quantization env
    from llmcompressor.modifiers.quantization import QuantizationModifier  # type: ignore[import-not-found]
    from transformers import AutoModelForCausalLM, AutoTokenizer

    group = {"targets": ["Linear"], **copy.deepcopy(SCHEMES[scheme])}
    base = _source_provenance(source)
    model = AutoModelForCausalLM.from_pretrained(str(source), dtype="auto")
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    oneshot(model=model, recipe=QuantizationModifier(config_groups={"group_0": group}, ignore=list(IGNORED)))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), save_compressed=True)
    tokenizer.save_pretrained(str(out))
    if (source / "LICENSE").is_file():
        shutil.copyfile(source / "LICENSE", out / "LICENSE")
    for path in out.iterdir():  # safetensors are written 0600: a server under another user must read them
        path.chmod(0o644)
    base_id = str(base.get("model_id") or "")
    kept: dict[str, Any] = {k: base[k] for k in BASE_FIELDS if k in base}
    record = {
        **kept,
        "model_id": quantized_model_id(base_id, scheme),
        "base_model_id": base_id,
        "source": base.get("source"),
        "conversion": base.get("conversion"),
        "quantization": {
            "scheme": scheme.upper(),
            "format": json.loads((out / "config.json").read_text())["quantization_config"]["format"],
            "config_group": group,
            "ignore": list(IGNORED),
            "method": "llmcompressor oneshot QuantizationModifier (round-to-nearest, data-free)",
            "quantizer": QUANTIZER,
            "version": QUANTIZATION,
            "from": str(source.name),
            "tools": {tool: importlib.metadata.version(tool) for tool in TOOLS},
        },
        "converted_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    (out / PROVENANCE_FILE).write_text(json.dumps(record, indent=2, default=str) + "\n")
    return out


def quant_python() -> Path:
    """The quantization environment's interpreter, beside the working directory or the repository."""
    for root in (Path.cwd(), Path(__file__).resolve().parents[3]):
        candidate = root / ENV_FOLDER / "bin" / "python"
        if candidate.is_file():
            return candidate
    raise QuantizationError(f"no {ENV_FOLDER} found: run {INSTALLER} (llmcompressor and lm-eval)")


def _run(python: Path, *args: str) -> None:
    """This file as a script under the quantization interpreter (`accelbench.local.offline_script`)."""
    from accelbench.local.offline_script import run_offline

    proc = run_offline(python, __file__, *args, timeout=QUANTIZE_TIMEOUT_S)
    if proc.returncode != 0:
        raise QuantizationError(
            f"{python} quantized_model {' '.join(args)} exited with code {proc.returncode}:\n"
            f"{proc.stderr[-3000:]}"
        )


def folder(scheme: str, source: Path | None = None, python: Path | None = None) -> Path:
    """The `scheme` checkpoint of the bf16 folder `source` (the real model's, converted if need be),
    quantized at most once: beside the source, under a file lock, built aside and renamed into place."""
    if scheme not in SCHEMES:
        raise QuantizationError(f"scheme {scheme!r}: one of {', '.join(SCHEMES)}")
    if source is None:
        from accelbench.local import real_model

        source = real_model.folder()
    key = cache_key(source, scheme)
    cache = source.parent
    out = cache / key
    if (out / PROVENANCE_FILE).is_file():
        return out
    python = python or quant_python()
    with (cache / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process quantizing: wait for it, then reuse its folder
        if not (out / PROVENANCE_FILE).is_file():
            partial = cache / f"{key}.partial"
            shutil.rmtree(partial, ignore_errors=True)  # what a killed run left
            _run(python, str(source), str(partial), scheme)
            shutil.rmtree(out, ignore_errors=True)  # a folder without provenance is unfinished
            partial.rename(out)
    return out


def main(argv: list[str]) -> int:
    """`SRC_DIR OUT_DIR SCHEME`: quantize the bf16 folder into OUT_DIR."""
    if len(argv) != 3 or argv[2] not in SCHEMES:
        print(f"usage: python {Path(__file__).name} SRC_DIR OUT_DIR {{{','.join(SCHEMES)}}}", file=sys.stderr)
        return 2
    print(quantize(Path(argv[0]), Path(argv[1]), argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
