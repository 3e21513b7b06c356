#!/usr/bin/env bash
# Create or update .venv with the pinned dependencies (constraints.txt). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=$(sed -n 's/^uv==//p' requirements-uv.txt)  # the one pin of uv, shared with the images
pick_python() {
  for py in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [ -n "$py" ] || continue
    if command -v "$py" >/dev/null 2>&1 &&
       "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  echo "bootstrap: Python 3.11 or newer is required (set PYTHON=...)" >&2
  return 1
}

if [ ! -x .venv/bin/python ]; then
  py=$(pick_python)
  echo "bootstrap: creating .venv with $($py --version)"
  "$py" -m venv .venv
fi
if [ "$(.venv/bin/uv --version 2>/dev/null | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  echo "bootstrap: installing uv $UV_VERSION into .venv"
  .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip --upgrade >/dev/null
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-uv.txt
fi
stamp=.venv/.accelbench-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing accelbench-campaigns and its pinned dependencies into .venv"
  .venv/bin/uv pip install --quiet --python .venv/bin/python -c constraints.txt -e ".[test,bench]"
  echo "$want" > "$stamp"
fi
