#!/usr/bin/env bash
# Optional: create .venv-vllm-gpu, the CUDA build of vLLM (PyPI `vllm`), so that local mode can measure GPU
# instance types on a worker with an NVIDIA GPU (accelbench.local.server.LOCAL_ENVIRONMENTS).
# The load generator stays the CPU environment's `vllm bench serve` (scripts/vllm-env.sh): one pinned client.
#   VLLM_GPU_ENV_DIR  where the environment goes (default .venv-vllm-gpu in the repository)
#   VLLM_GPU_VERSION  the vLLM release to install (default: the CPU environment's, so tiers compare like with like)
# Needs an NVIDIA driver to serve (nvidia-smi); installs without one, with a warning. Not part of the test run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/uv.sh

version=${VLLM_GPU_VERSION:-$(sed -n 's/^VLLM_CPU_VERSION=//p' scripts/vllm-env.sh)}
env_dir=${VLLM_GPU_ENV_DIR:-.venv-vllm-gpu}
stamp=$env_dir/.accelbench-installed
want=$(printf '%s\n' "$version" | cat - "$0" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "vllm-gpu-env: no NVIDIA GPU answers nvidia-smi here; installing anyway, but local mode will refuse GPU types" >&2
fi
py=${PYTHON:-python3}
env_tool_init vllm-gpu-env . "$py"
env_step "installing vllm $version (CUDA build, with its CUDA torch) into $env_dir"
[ -x "$env_dir/bin/python" ] || "$py" -m venv "$env_dir"
python=$env_dir/bin/python
env_install "$python" "vllm==$version"
env_step "checking: vllm --version"
"$env_dir/bin/vllm" --version >/dev/null 2>&1 || { echo "vllm-gpu-env: 'vllm --version' fails in $env_dir" >&2; exit 1; }
echo "$want" > "$stamp"
env_step "done: $env_dir (ACCELBENCH_VLLM_GPU_PYTHON=$env_dir/bin/python, found there by default)"
