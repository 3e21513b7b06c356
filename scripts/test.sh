#!/usr/bin/env bash
# The full test suite: installs PostgreSQL and Chromium (Debian) when missing, builds .venv, runs ruff,
# lint-imports (the package layers), mypy and pytest over the three tiers (tests/unit, tests/integration,
# tests/e2e) in parallel lanes, a lane per CPU and one more (pytest-xdist; how they share the tests:
# tests/conftest.py).
#   scripts/test.sh --fast      the unit tier only: .venv, ruff, lint-imports, mypy, tests/unit
#   scripts/test.sh -k pricing  extra arguments go to pytest (-n 0: one process, no lanes)
# Steps that wait on the network or the disk run beside the others (Debian's packages beside the Python
# environments; the vLLM and checkov environments and mypy beside the checks and the unit tier, which needs
# none of them): their output comes whole when they end, and a step that fails fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Python writes its bytecode caches even where the environment says not to (PYTHONDONTWRITEBYTECODE): .venv is
# installed without them, and a run starts Python many times (each lane, every Airflow process and task,
# each DAG file's parse check), each of which would compile Airflow's and the library's modules anew.
unset PYTHONDONTWRITEBYTECODE

lanes=(-n logical --no-loadscope-reorder)  # the lanes: tests/conftest.py (pytest_xdist_make_scheduler)
# The whole suite runs a lane more than there are CPUs: an e2e test spends much of its time waiting (a load
# level's pace, a scheduler's loop), which a lane per CPU left idle. ACCELBENCH_TEST_LANES sets the count.
all_lanes=(-n "${ACCELBENCH_TEST_LANES:-$(($(nproc) + 1))}" --no-loadscope-reorder)
logs=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT  # a step that failed stops the ones beside it
declare -A beside=()

start_beside() {  # <name> <command>...: run it in the background, its output kept for finish_beside
  # <name>.rc, written when it ends, tells the tests that wait for it (tests/support/steps.py) how it went.
  { local rc=0; "${@:2}" || rc=$?; echo "$rc" >"$logs/$1.rc.part"; mv "$logs/$1.rc.part" "$logs/$1.rc"; exit "$rc"; } \
    >"$logs/$1.log" 2>&1 &
  beside[$1]=$!
}

finish_beside() {  # <name>: wait for it, print its output, and stop the run if it failed
  local rc=0
  wait "${beside[$1]}" || rc=$?
  cat "$logs/$1.log"
  if [ "$rc" -ne 0 ]; then
    echo "test: $1 failed (exit $rc)" >&2
    exit "$rc"
  fi
}

warm_bytecode() {  # what the lanes import, compiled once: each lane compiled it anew, all at once (3x the CPU)
  echo "test: bytecode: $(.venv/bin/python -m pytest --collect-only -q -p no:cacheprovider | tail -n 1)"
}

mypy_check() {
  echo "test: mypy"
  # At the lowest priority: no test waits for it, so it takes the CPU the set-up's bytecode warm-up and the
  # lanes leave (a paced test's waits, the last lane's tail) instead of competing with them.
  nice -n 19 .venv/bin/python -m mypy  # [tool.mypy] in pyproject.toml: the library (strict) and dags/
}

if [ "${1:-}" = "--fast" ]; then
  shift
  scripts/bootstrap.sh
  .venv/bin/ruff check . && .venv/bin/ruff format --check .
  .venv/bin/lint-imports --no-cache
  start_beside mypy mypy_check
  rc=0
  .venv/bin/python -m pytest "${lanes[@]}" tests/unit "$@" || rc=$?
  finish_beside mypy
  exit "$rc"
fi

debian_packages() {  # the Debian packages the tests start for real: PostgreSQL (catalog), Chromium (the view)
  local need=()
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  [ ${#need[@]} -gt 0 ] || return 0
  if [ "$(id -u)" = 0 ]; then
    echo "test: installing ${need[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "test: ${need[*]} missing; run as root or: sudo apt-get install ${need[*]}" >&2
  fi
}

start_beside debian debian_packages
scripts/bootstrap.sh  # .venv first: the other environments install with its uv
# Both without compiling every module's bytecode at install (21,600 files for vLLM's, ~30 s of CPU beside the
# tests): the tests import a fraction of them, and Python compiles those on first import.
start_beside checkov-env env ENV_COMPILE_BYTECODE=0 scripts/checkov-env.sh  # checkov pins an old boto3
start_beside vllm-env env ENV_COMPILE_BYTECODE=0 scripts/vllm-env.sh  # vLLM CPU for local-mode servers
start_beside quant-env env ENV_COMPILE_BYTECODE=0 scripts/quant-env.sh  # llmcompressor: quantized checkpoints
start_beside bytecode warm_bytecode
echo "test: ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "test: import contracts"
.venv/bin/lint-imports --no-cache  # the contracts in pyproject.toml's [tool.importlinter]
start_beside mypy mypy_check
finish_beside debian  # Chromium: the integration tier's pages
finish_beside bytecode
# The unit and integration tiers need neither the vLLM nor the checkov environment (the few tests that run
# checkov or look for .venv-vllm wait for them): pytest starts while they are built, its lanes take those
# tiers first, and an e2e test waits for them (tests/support/steps.py, tests/conftest.py).
echo "test: pytest (set-up took ${SECONDS} s; the vLLM and checkov environments and mypy still running)"
rc=0
ACCELBENCH_TEST_STEPS=$logs .venv/bin/python -m pytest "${all_lanes[@]}" --durations=25 "$@" || rc=$?
for step in mypy checkov-env vllm-env quant-env; do finish_beside "$step"; done
exit "$rc"
