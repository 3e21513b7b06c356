# Sourced by the environment builders (scripts/vllm-env.sh, scripts/checkov-env.sh, docker/*/install.sh):
# installs with uv when there is one, with pip otherwise, and prints one line per step.
#   UV   the uv binary (else .venv/bin/uv of this checkout, which scripts/bootstrap.sh installs, else uv on
#        PATH, which the images pip-install from requirements-uv.txt); UV=pip forces pip
# uv reads none of pip's configuration, so the settings pip would use here (find-links, index URLs, a global
# constraint file; PIP_* variables or pip.conf) are handed to uv: both resolve the same wheels (on a machine
# whose pip finds torch's CPU wheel in a local wheel directory, uv finds it there too).
# uv's cache (~/.cache/uv, or UV_CACHE_DIR) makes a fresh environment of cached wheels take seconds.
# Progress: each step is a line with the seconds since env_tool_init. On a terminal uv draws its own progress
# bars; elsewhere (a log, CI, an image build) uv's bars are off, so its per-package lines (" + name==version")
# are left out, its summary lines ("Resolved/Prepared/Installed N packages in ...") kept, and a long install
# prints "still installing (N s)" every ENV_HEARTBEAT_S seconds (default 30; 0: never), as pip's does always.
# Call: env_tool_init <tag> <folder holding requirements-uv.txt> [<python whose pip settings count>], then
# env_step, env_venv, env_install, env_uninstall, env_check. A script that only wants the progress lines and env_run
# calls env_progress_init <tag> [<uv>] (scripts/bootstrap.sh, which installs uv itself).
# shellcheck shell=bash

env_progress_init() {  # <tag> [<uv>]: env_step's prefix, its clock starting now; the uv env_run runs
  env_tag=$1
  env_t0=$SECONDS
  env_uv=${2:-}
}

env_tool_init() {
  env_progress_init "$1"
  local pinned
  pinned=$(sed -n 's/^uv==//p' "$2/requirements-uv.txt" 2>/dev/null || true)
  env_uv=${UV:-}
  if [ -z "$env_uv" ]; then
    if [ -x "$2/.venv/bin/uv" ]; then env_uv=$2/.venv/bin/uv; else env_uv=$(command -v uv || true); fi
  fi
  [ "$env_uv" = pip ] && env_uv=
  if [ -n "$env_uv" ] && ! "$env_uv" --version >/dev/null 2>&1; then env_uv=; fi
  if [ -z "$env_uv" ]; then
    env_step "installer: pip (no uv found; scripts/bootstrap.sh installs the pinned one)"
    return 0
  fi
  local have
  have=$("$env_uv" --version | cut -d' ' -f2)
  env_step "installer: uv $have ($env_uv)"
  if [ -n "$pinned" ] && [ "$have" != "$pinned" ]; then
    echo "$env_tag: note: requirements-uv.txt pins uv $pinned" >&2
  fi
  export UV=$env_uv  # a builder this one runs (docker/loadgen/install.sh runs vllm-env.sh) takes the same uv
  _env_pip_settings_to_uv "${3:-${PYTHON:-python3}}"
}

env_step() {  # one progress line, with the seconds since env_tool_init
  echo "$env_tag: [$((SECONDS - env_t0))s] $*"
}

_env_heartbeat() {  # <pid>: "still installing" every ENV_HEARTBEAT_S s, until killed or <pid> is gone
  local parent=$1 every=${ENV_HEARTBEAT_S:-30} start=$SECONDS next
  next=$((start + every))
  # sleep's output goes nowhere: one left from a killed heartbeat holds no caller's pipe open.
  while sleep 1 >/dev/null 2>&1; do
    kill -0 "$parent" 2>/dev/null || exit 0  # the script died (Ctrl-C, a kill): so does its heartbeat
    if [ "$SECONDS" -ge "$next" ]; then
      env_step "still installing ($((SECONDS - start)) s)"
      next=$((next + every))
    fi
  done
}

env_run() {  # <command>...: a long install, with the heartbeat off a terminal (or with pip, always)
  local rc=0 heartbeat=
  if [ "${ENV_HEARTBEAT_S:-30}" -gt 0 ] && { [ -z "$env_uv" ] || [ ! -t 2 ]; }; then
    _env_heartbeat "$$" &
    heartbeat=$!
  fi
  if [ -n "$env_uv" ] && [ ! -t 2 ]; then  # off a terminal: uv's summary lines, not one line per package
    { "$@" 2>&1 1>&3 3>&- | { grep --line-buffered -vE '^ [-+~] ' || true; } >&2; rc=${PIPESTATUS[0]}; } 3>&1 || true
  else
    "$@" || rc=$?
  fi
  if [ -n "$heartbeat" ]; then
    kill "$heartbeat" 2>/dev/null || true
    wait "$heartbeat" 2>/dev/null || true
  fi
  return "$rc"
}

# pip's value for a setting: its PIP_* variable, else its configuration files (`pip config list`).
_env_pip_setting() {
  local var
  var=PIP_$(echo "$2" | tr 'a-z-' 'A-Z_')
  if [ -n "${!var:-}" ]; then
    echo "${!var}"
  elif [ -n "$_env_pip_config" ]; then
    printf '%s\n' "$_env_pip_config" | sed -n "s/^\(install\|global\)\.$2='\(.*\)'\$/\2/p" | head -n1
  fi
}

_env_existing() {  # the locations that exist: remote URLs, and local paths or file:// URLs that are there
  local loc
  for loc in $1; do
    case $loc in
      file://*) [ -e "${loc#file://}" ] && echo "$loc" ;;
      *://*) echo "$loc" ;;
      *) [ -e "$loc" ] && echo "$loc" ;;
    esac
  done
}

_env_pip_settings_to_uv() {
  _env_pip_config=$("$1" -m pip config list 2>/dev/null || true)
  local links extra index constraint
  links=$(_env_existing "$(_env_pip_setting "$1" find-links)")
  extra=$(_env_existing "$(_env_pip_setting "$1" extra-index-url)")
  index=$(_env_pip_setting "$1" index-url)
  constraint=$(_env_existing "$(_env_pip_setting "$1" constraint)")
  if [ -n "$links" ] && [ -z "${UV_FIND_LINKS:-}" ]; then export UV_FIND_LINKS=${links//$'\n'/,}; fi
  if [ -n "$index" ] && [ -z "${UV_DEFAULT_INDEX:-}" ]; then export UV_DEFAULT_INDEX=$index; fi
  if [ -n "$extra" ] && [ -z "${UV_INDEX:-}" ]; then
    export UV_INDEX=${extra//$'\n'/ }
    # pip takes the best version across all its indexes; uv by default stops at the first index that has
    # the package. This keeps pip's choice.
    export UV_INDEX_STRATEGY=${UV_INDEX_STRATEGY:-unsafe-best-match}
  fi
  if [ -n "$constraint" ] && [ -z "${UV_CONSTRAINT:-}" ]; then export UV_CONSTRAINT=${constraint//$'\n'/ }; fi
  if [ -n "${links}${extra}${index}${constraint}" ]; then
    env_step "uv takes pip's settings here:${links:+ find-links}${index:+ index-url}${extra:+ extra-index-url}${constraint:+ constraint}"
  fi
}

env_python() {  # the interpreter a new environment is made from: $PYTHON when set, else the distribution's
  # Python 3.11+ (/usr/bin/python3), else python3 on PATH. Debian builds its interpreter with profile-guided and
  # link-time optimisation; pyenv's default build (python3 on PATH on this kind of machine) has neither, and a
  # shared libpython: the same Python work took 11-39% more CPU there (benchmarks/interpreters.py). Either
  # must carry venv and ensurepip (scripts/bootstrap.sh makes .venv with `python -m venv`).
  local py
  for py in ${PYTHON:+"$PYTHON"} /usr/bin/python3 python3; do
    if command -v "$py" >/dev/null 2>&1 &&
       "$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$py"; return 0
    fi
    if [ -n "${PYTHON:-}" ]; then break; fi  # asked for by name: that one or none
  done
  echo "${env_tag:-env}: Python 3.11 or newer, with venv and ensurepip, is required (${PYTHON:+PYTHON=$PYTHON is not; }set PYTHON=...)" >&2
  return 1
}

env_venv() {  # <folder> <python>: a new virtual environment for env_install. With uv, `uv venv`: no pip in it
  # (uv installs into it; seeding pip is `python -m venv`'s ensurepip, ~3.5 s of CPU per environment).
  if [ -n "$env_uv" ]; then  # that interpreter by its path: never one uv would find or download instead
    "$env_uv" venv --quiet --allow-existing --no-python-downloads --python "$(command -v "$2" || echo "$2")" "$1"
  else
    "$2" -m venv "$1"
  fi
}

env_install() {  # <python of the environment> <pip install arguments>...
  local python=$1
  shift
  if [ -n "$env_uv" ]; then  # bytecode compiled at install, as pip does: an image's read-only root cannot
    # take it later, and each start pays. ENV_COMPILE_BYTECODE=0: not (scripts/test.sh's environments and a
    # test's throwaway one import a fraction of their modules, which Python compiles on first import).
    local compile=(--compile-bytecode)
    if [ "${ENV_COMPILE_BYTECODE:-1}" = 0 ]; then compile=(); fi
    env_run "$env_uv" pip install "${compile[@]}" --python "$python" "$@"
  else  # pip's notes about missing optional local indexes are noise: filtered out
    PIP_DISABLE_PIP_VERSION_CHECK=1 env_run "$python" -m pip install --quiet "$@" \
      2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  fi
}

env_uninstall() {  # <python of the environment> <distribution>...: the ones installed, quietly
  local python=$1
  shift
  if [ -n "$env_uv" ]; then
    "$env_uv" pip uninstall --quiet --python "$python" "$@" >/dev/null 2>&1 || true
  else
    "$python" -m pip uninstall --quiet -y "$@" >/dev/null 2>&1 || true
  fi
}

env_check() {  # <python of the environment>: every installed distribution's requirements are met
  if [ -n "$env_uv" ]; then
    "$env_uv" pip check --python "$1"
  else
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$1" -m pip check
  fi
}
