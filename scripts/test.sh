#!/usr/bin/env bash
# The full test suite: installs PostgreSQL (Debian) when missing, builds .venv, runs ruff and pytest.
# Extra arguments go to pytest, e.g. scripts/test.sh -k pricing
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "test: installing PostgreSQL from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  else
    echo "test: PostgreSQL server binaries are missing; run as root or: sudo apt-get install postgresql" >&2
  fi
fi

scripts/bootstrap.sh
scripts/checkov-env.sh  # checkov pins an old boto3: its own environment
scripts/vllm-env.sh     # vLLM CPU for local-mode servers: its own environment
echo "test: ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "test: pytest"
exec .venv/bin/python -m pytest "$@"
