"""A model's shape from its Hugging Face config.json, read from a local path or a model store."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.config import Settings, env_name
from accelbench.errors import ConfigError

MODEL_STORE_SETTING = env_name("model_store")
BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}


@dataclass(frozen=True)
class Quantization:
    """What a quantized checkpoint stores: e.g. compressed-tensors W4A8 (4-bit weights, 8-bit activations)."""

    method: str
    weight_bits: int
    activation_bits: int | None
    weight_type: str = "int"  # "float" for FP8 checkpoints stored as compressed-tensors
    # Bits each weight takes as stored, where the format does not pack them: compressed-tensors'
    # "int-quantized" keeps a 4-bit weight in an int8 (measured: the W4A8 checkpoint of the real model holds
    # as many bytes as its W8A8 one, benchmarks/RESULTS.md), "naive-quantized" in the original dtype.
    storage_bits: int | None = None

    @property
    def bits_stored(self) -> int:
        return max(self.weight_bits, self.storage_bits or 0)

    @property
    def scheme(self) -> str:
        prefix = "FP" if self.weight_type == "float" else "W"
        return f"{prefix}{self.weight_bits}A{self.activation_bits or 16}"


@dataclass(frozen=True)
class ModelShape:
    name: str
    architecture: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    torch_dtype: str
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    dense_layers: int = (
        0  # leading layers with a dense MLP in an MoE model (DeepSeek's first_k_dense_replace)
    )
    quantization: Quantization | None = None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def _attention_params(self) -> int:
        q = self.hidden_size * self.num_heads * self.head_dim
        kv = 2 * self.hidden_size * self.num_kv_heads * self.head_dim
        o = self.num_heads * self.head_dim * self.hidden_size
        return q + kv + o

    def _dense_mlp_params(self) -> int:
        return 3 * self.hidden_size * self.intermediate_size  # gate, up, down

    def _moe_mlp_params(self, *, active: bool) -> int:
        experts = self.experts_per_token if active else self.num_experts
        routed = experts * 3 * self.hidden_size * self.moe_intermediate_size
        shared = 3 * self.hidden_size * self.shared_expert_intermediate_size
        return routed + shared + self.hidden_size * self.num_experts  # + router

    def linear_params(self, *, active: bool = False) -> int:
        """Parameters in the transformer blocks' linear layers (what quantization compresses)."""
        if not self.is_moe:
            return self.num_layers * (self._attention_params() + self._dense_mlp_params())
        dense = min(self.dense_layers, self.num_layers)
        return (
            self.num_layers * self._attention_params()
            + dense * self._dense_mlp_params()
            + (self.num_layers - dense) * self._moe_mlp_params(active=active)
        )

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    def total_params(self) -> int:
        """All parameters; MoE models count every expert (they all sit in memory)."""
        norms = self.num_layers * 2 * self.hidden_size + self.hidden_size
        return self.linear_params() + self.embedding_params() + norms

    def active_params(self) -> int:
        norms = self.num_layers * 2 * self.hidden_size + self.hidden_size
        return self.linear_params(active=True) + self.embedding_params() + norms

    def weight_bytes(self, dtype_bytes: int = 2) -> int:
        """Bytes of weights in memory: quantized linear layers at the bits their format stores, the rest at
        dtype (scales and zero points are not counted: 3% of a 4-bit checkpoint of group size 64)."""
        other = self.total_params() - self.linear_params()
        if self.quantization is None:
            return self.total_params() * dtype_bytes
        return int(self.linear_params() * self.quantization.bits_stored / 8) + other * dtype_bytes

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """layers x kv_heads x head_dim x 2 (K and V) x dtype bytes."""
        return self.num_layers * self.num_kv_heads * self.head_dim * 2 * dtype_bytes


# compressed-tensors formats that do not pack sub-byte weights: the bits each weight is stored in.
STORAGE_BITS = {"int-quantized": 8, "naive-quantized": 16}


def _quantization(cfg: dict[str, Any], where: str) -> Quantization | None:
    q = cfg.get("quantization_config")
    if not q:
        return None
    method = str(q.get("quant_method", "")).lower()
    if method == "compressed-tensors":
        groups = list((q.get("config_groups") or {}).values())
        if not groups:
            raise ConfigError(f"{where}.quantization_config.config_groups", None, "missing")
        weights = groups[0].get("weights") or {}
        acts = groups[0].get("input_activations") or {}
        stored = STORAGE_BITS.get(str(groups[0].get("format") or q.get("format")))
        return Quantization(
            method,
            int(weights.get("num_bits", 16)),
            acts.get("num_bits"),
            str(weights.get("type", "int")),
            stored,
        )
    if method == "fp8":
        return Quantization(method, 8, 8, "float")
    bits = q.get("bits") or q.get("w_bit") or q.get("weight_bits")
    if bits is None:
        raise ConfigError(f"{where}.quantization_config", method, "no bit width found")
    return Quantization(method, int(bits), None)


def parse_config(cfg: dict[str, Any], name: str) -> ModelShape:
    """Read the fields that size a model; multimodal configs keep them under text_config."""
    text = cfg.get("text_config") or cfg
    where = f"{name}/config.json"
    try:
        hidden = int(text["hidden_size"])
        heads = int(text["num_attention_heads"])
        experts = int(
            text.get("num_local_experts") or text.get("num_experts") or text.get("n_routed_experts") or 0
        )
        return ModelShape(
            name=name,
            architecture=(cfg.get("architectures") or ["unknown"])[0],
            hidden_size=hidden,
            num_layers=int(text["num_hidden_layers"]),
            num_heads=heads,
            num_kv_heads=int(text.get("num_key_value_heads") or heads),
            head_dim=int(text.get("head_dim") or hidden // heads),
            intermediate_size=int(text.get("intermediate_size") or 0),
            vocab_size=int(text["vocab_size"]),
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
            max_position_embeddings=int(text.get("max_position_embeddings") or 0),
            torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"),
            num_experts=experts,
            experts_per_token=int(text.get("num_experts_per_tok") or 0),
            moe_intermediate_size=int(text.get("moe_intermediate_size") or text.get("intermediate_size") or 0)
            if experts
            else 0,
            # Qwen-MoE names the shared expert's width; DeepSeek counts shared experts of the routed width.
            shared_expert_intermediate_size=int(
                text.get("shared_expert_intermediate_size")
                or int(text.get("n_shared_experts") or 0) * int(text.get("moe_intermediate_size") or 0)
            ),
            dense_layers=int(text.get("first_k_dense_replace") or 0) if experts else 0,
            quantization=_quantization(cfg, where),
        )
    except KeyError as exc:
        raise ConfigError(where, None, f"has no {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(where, None, f"has a non-numeric size field ({exc})") from None


def find_config(model: str, store: str | None = None) -> Path:
    """config.json of `model`: a local directory, or <store>/<org>--<name>/ or <store>/<org>/<name>/."""
    direct = Path(model).expanduser()
    candidates = [direct / "config.json"]
    store = store if store is not None else Settings.from_env("model_store").library.model_store

    if store:
        root = Path(store).expanduser()
        candidates += [root / model.replace("/", "--") / "config.json", root / model / "config.json"]
    for path in candidates:
        if path.is_file():
            return path
    where = (
        f" or in the model store {MODEL_STORE_SETTING}={store}"
        if store
        else f" ({MODEL_STORE_SETTING}, the model store, is unset)"
    )
    raise ConfigError("model", model, f"no config.json found as a local path{where}")


def load_model_shape(model: str, store: str | None = None) -> ModelShape:
    path = find_config(model, store)
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError("model", model, f"{path} is not readable JSON ({exc})") from None
    return parse_config(cfg, model)
