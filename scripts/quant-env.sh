#!/usr/bin/env bash
# Create .venv-quant: llmcompressor (PyPI), the field's tool for compressed-tensors checkpoints, which
# accelbench.local.quantized_model runs to make W8A8 / W4A8 / W4A16 checkpoints of the real model; and lm-eval
# (PyPI, EleutherAI's harness), which accelbench.loadgen.quality_step runs against a live server for its accuracy.
# Separate from .venv-vllm: llmcompressor pins a newer compressed-tensors and an older transformers than
# vLLM 0.32 does; the checkpoint it writes is what vLLM reads, so nothing else needs to be shared.
#   QUANT_ENV_DIR  where the environment goes (default .venv-quant in the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/uv.sh

LLMCOMPRESSOR_VERSION=0.14.0.1
LM_EVAL_VERSION=0.4.13
TORCH_VERSION=2.13.0
env_dir=${QUANT_ENV_DIR:-.venv-quant}
stamp=$env_dir/.accelbench-installed
want=$(cat constraints-quant.txt "$0" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi

py=$(env_python)  # scripts/uv.sh: the distribution's Python when it has one
env_tool_init quant-env . "$py"
env_step "installing torch $TORCH_VERSION (CPU build), llmcompressor $LLMCOMPRESSOR_VERSION and lm-eval $LM_EVAL_VERSION into $env_dir"
[ -x "$env_dir/bin/python" ] || env_venv "$env_dir" "$py"
python=$env_dir/bin/python
# torch first, as in scripts/vllm-env.sh: asked for by llmcompressor alone, a resolver would pick a CUDA build.
env_install "$python" "torch==$TORCH_VERSION"
env_install "$python" -c constraints-quant.txt "llmcompressor==$LLMCOMPRESSOR_VERSION" "lm-eval[api]==$LM_EVAL_VERSION"
# PyPI's torchvision/torchaudio/torchcodec are CUDA-linked and break `import transformers` beside the CPU torch.
env_uninstall "$python" torchvision torchaudio torchcodec triton
# Installed, not imported: importing it (torch, transformers) takes 40 s of a CPU beside the tests, and the
# e2e test that quantizes imports it anyway, failing with the import's own error.
env_step "checking: llmcompressor's and lm-eval's metadata"
"$python" -c "import importlib.metadata as m; m.version('llmcompressor'); m.version('lm-eval')" \
  || { echo "quant-env: llmcompressor or lm-eval is not installed in $env_dir" >&2; exit 1; }
echo "$want" > "$stamp"
env_step "done: $env_dir"
