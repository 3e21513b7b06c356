#!/usr/bin/env bash
# Installs accelbench-campaigns with its providers into a Python environment, every version pinned by
# constraints.txt (the lock of the tested .venv). The Airflow image runs it (docker/airflow/Dockerfile), and
# tests/e2e/test_images.py runs it into a fresh virtual environment, so both get the same requirement set.
# With uv (the image installs the one requirements-uv.txt pins; scripts/uv.sh), with pip where there is none.
# Usage: install.sh <python> <source: a checkout, or the image's copy of pyproject.toml, constraints.txt, plugins/>
set -euo pipefail
python=$(command -v "$1" || echo "$1")  # "python" in the image: the one on PATH, its venv
src=$2
. "$src/scripts/uv.sh"
env_tool_init airflow-install "$src" "$python"
env_step "installing accelbench-campaigns and its providers (constraints.txt) for $python"
env_install "$python" -c "$src/constraints.txt" "$src"
# A broken or missing requirement fails the build here, not at the first DAG parse.
env_step "checking: requirements met, the plugin and the providers import"
env_check "$python"
"$python" -c 'import accelbench.airflow.ui_plugin, airflow.providers.cncf.kubernetes, airflow.providers.amazon'
env_step "done"
