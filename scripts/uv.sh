# Sourced by the environment builders (scripts/vllm-env.sh, scripts/checkov-env.sh, docker/*/install.sh):
# installs with uv when there is one, with pip otherwise, and prints one line per step.
#   UV   the uv binary (else .venv/bin/uv of this checkout, which scripts/bootstrap.sh installs, else uv on
#        PATH, which the images pip-install from requirements-uv.txt); UV=pip forces pip
# uv reads none of pip's configuration, so the settings pip would use here (find-links, index URLs, a global
# constraint file; PIP_* variables or pip.conf) are handed to uv: both resolve the same wheels (on a machine
# whose pip finds torch's CPU wheel in a local wheel directory, uv finds it there too).
# uv's cache (~/.cache/uv, or UV_CACHE_DIR) makes a fresh environment of cached wheels take seconds.
# Call: env_tool_init <tag> <folder holding requirements-uv.txt> [<python whose pip settings count>], then
# env_step, env_install, env_uninstall, env_check.

env_tool_init() {
  env_tag=$1
  env_t0=$SECONDS
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

env_install() {  # <python of the environment> <pip install arguments>...
  local python=$1
  shift
  if [ -n "$env_uv" ]; then  # bytecode compiled at install, as pip does: an image's read-only root cannot
    "$env_uv" pip install --compile-bytecode --python "$python" "$@"  # take it later, and each start pays
  else  # pip's notes about missing optional local indexes are noise: filtered out
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$python" -m pip install --quiet "$@" \
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
