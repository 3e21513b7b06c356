#!/usr/bin/env bash
# Installs accelbench-campaigns with its providers into a Python environment, every version pinned by
# constraints.txt (the lock of the tested .venv). The Airflow image runs it (docker/airflow/Dockerfile), and
# tests/test_images.py runs it into a fresh virtual environment, so both get the same requirement set.
# Usage: install.sh <python> <source: a checkout, or the image's copy of pyproject.toml, constraints.txt, plugins/>
set -euo pipefail
python=$1
src=$2
"$python" -m pip install --disable-pip-version-check --quiet -c "$src/constraints.txt" "$src"
# A broken or missing requirement fails the build here, not at the first DAG parse.
"$python" -m pip check
"$python" -c 'import accelbench.airflow.ui_plugin, airflow.providers.cncf.kubernetes, airflow.providers.amazon'
