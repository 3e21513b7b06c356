"""Build a small Llama with random weights and a locally trained tokenizer: no model hub needed.

Run with the vLLM environment's interpreter (it has torch, transformers and tokenizers):
    .venv-vllm/bin/python -m accelbench.local.tiny_model OUT_DIR
Random weights give meaningless text but real compute; benchmarks use --ignore-eos. The folder's
provenance file names the model by an id made from what the builder builds it from (`model_id`), so the
same tiny model built in two checkouts is one model in the lake.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelbench.core.model_origin import PROVENANCE_FILE  # standard library only: fine in the vLLM env

if TYPE_CHECKING:
    from accelbench.core.spec import ServerSpec

MODEL_NAME = "accelbench/tiny-llama"
BUILDER = "accelbench.local.tiny_model"

WORDS = [
    "graviton",
    "neoverse",
    "vllm",
    "token",
    "latency",
    "throughput",
    "prefill",
    "decode",
    "cache",
    "kernel",
    "tensor",
    "bandwidth",
    "memory",
    "socket",
    "core",
    "thread",
    "batch",
    "request",
    "stream",
    "server",
    "client",
    "price",
    "hour",
]
SHAPE = {
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 8192,
    "max_position_embeddings": 4096,
}
CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
SPECIAL_TOKENS = ("<s>", "</s>", "<pad>")


def model_id(seed: int = 0) -> str:
    """The tiny model's id: a hash of everything the builder makes it from (the seed, the shape, the
    tokenizer's corpus words and special tokens, the chat template), then its name,
    "build-0123456789ab/accelbench/tiny-llama": another shape or seed is another model."""
    inputs = {
        "seed": seed,
        "shape": SHAPE,
        "words": WORDS,
        "special_tokens": SPECIAL_TOKENS,
        "chat_template": CHAT_TEMPLATE,
    }
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]
    return f"build-{digest}/{MODEL_NAME}"


def provenance(seed: int = 0) -> dict[str, Any]:
    """What the built folder's provenance file says: the model's id, its name, the builder, seed and shape."""
    return {"model_id": model_id(seed), "name": MODEL_NAME, "builder": BUILDER, "seed": seed, **SHAPE}


def server_spec(
    model: Path | str,
    served_model_name: str = "tiny",
    max_model_len: int = 1024,
    model_weights_gib: float = 0.02,
) -> ServerSpec:
    """How tests and benchmarks serve a small local model (the tiny one by default; the real one through
    accelbench.local.real_model): one CPU for the engine, eager mode, bf16, 1 GiB of KV cache."""
    from accelbench.core.spec import ServerSpec
    from accelbench.runtime.recipes import VllmCpu

    return ServerSpec(
        runtime="vllm-cpu",
        version="0.32.0",
        image=VllmCpu().image("0.32.0"),
        model=str(model),
        served_model_name=served_model_name,
        dtype="bfloat16",
        tensor_parallel_size=1,
        kv_cache_gib=1,
        max_model_len=max_model_len,
        instance_type="local",
        accelerator_type="cpu",
        accelerator_count=0,
        vcpu=2,
        server_cpu=1,
        server_memory_mib=4096,
        model_weights_gib=model_weights_gib,
        extra_engine_args=("--enforce-eager",),
    )


def build(out: Path, seed: int = 0) -> Path:
    """Write config, safetensors weights, tokenizer and chat template to `out` (deterministic)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(64)) for _ in range(2000)]
    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=SHAPE["vocab_size"],
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    config = LlamaConfig(**SHAPE, bos_token_id=0, eos_token_id=1, pad_token_id=2, tie_word_embeddings=False)
    torch.manual_seed(seed)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    (out / PROVENANCE_FILE).write_text(json.dumps(provenance(seed), indent=2) + "\n")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: python -m {BUILDER} OUT_DIR")
    print(build(Path(sys.argv[1])))
