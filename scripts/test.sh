#!/usr/bin/env bash
# The full test suite: installs PostgreSQL and Chromium (Debian) when missing, builds .venv, runs ruff,
# lint-imports (the package layers), mypy and pytest over the three tiers (tests/unit, tests/integration,
# tests/e2e) in parallel lanes, one per CPU (pytest-xdist; the vLLM tests share one lane, tests/conftest.py).
#   scripts/test.sh --fast      the unit tier only: .venv, ruff, lint-imports, mypy, tests/unit
#   scripts/test.sh -k pricing  extra arguments go to pytest (-n 0: one process, no lanes)
set -euo pipefail
cd "$(dirname "$0")/.."

lanes=(-n logical --no-loadscope-reorder)  # the lanes: tests/conftest.py (pytest_xdist_make_scheduler)
if [ "${1:-}" = "--fast" ]; then
  shift
  scripts/bootstrap.sh
  .venv/bin/ruff check . && .venv/bin/ruff format --check .
  .venv/bin/lint-imports --no-cache
  echo "test: mypy"
  .venv/bin/python -m mypy  # [tool.mypy] in pyproject.toml: the library (strict) and dags/
  exec .venv/bin/python -m pytest "${lanes[@]}" tests/unit "$@"
fi

# Debian packages the tests start for real: PostgreSQL (catalog) and Chromium (the Benchmarks view).
need=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "test: installing ${need[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "test: ${need[*]} missing; run as root or: sudo apt-get install ${need[*]}" >&2
  fi
fi

scripts/bootstrap.sh
scripts/checkov-env.sh  # checkov pins an old boto3: its own environment
scripts/vllm-env.sh     # vLLM CPU for local-mode servers: its own environment
echo "test: ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "test: import contracts"
.venv/bin/lint-imports --no-cache  # the contracts in pyproject.toml's [tool.importlinter]
echo "test: mypy"
.venv/bin/python -m mypy  # [tool.mypy] in pyproject.toml: the library (strict) and dags/
echo "test: pytest (set-up took ${SECONDS} s)"
exec .venv/bin/python -m pytest "${lanes[@]}" --durations=25 "$@"
