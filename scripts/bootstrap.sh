#!/usr/bin/env bash
# Create or update .venv with the pinned dependencies (constraints.txt). Safe to re-run.
# A line per step with the seconds since the start; a long install shows uv's progress (scripts/uv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/uv.sh
env_progress_init bootstrap

UV_VERSION=$(sed -n 's/^uv==//p' requirements-uv.txt)  # the one pin of uv, shared with the images

if [ ! -x .venv/bin/python ]; then
  py=$(env_python)
  env_step "creating .venv with $($py --version)"
  "$py" -m venv .venv
fi
if [ "$(.venv/bin/uv --version 2>/dev/null | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  env_step "installing uv $UV_VERSION into .venv (pip)"
  .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip --upgrade >/dev/null
  env_run .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-uv.txt \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)  # pip's notes on absent local indexes
fi
stamp=.venv/.accelbench-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  env_uv=.venv/bin/uv  # what env_run runs: off a terminal, its summary lines and a heartbeat
  env_step "installing accelbench-campaigns and its pinned dependencies into .venv (uv $UV_VERSION)"
  env_run .venv/bin/uv pip install --python .venv/bin/python -c constraints.txt -e ".[test,bench]"
  # The editable build leaves its metadata in plugins/ too, which is on sys.path: Airflow would find the
  # plugin's entry point twice ("Plugin 'accelbench' already registered" on the UI's home page). The
  # installed metadata is the venv's dist-info.
  rm -rf plugins/*.egg-info
  echo "$want" > "$stamp"
  env_step "done: .venv"
fi
