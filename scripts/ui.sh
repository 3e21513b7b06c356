#!/usr/bin/env bash
# The Airflow UI on this machine, on the demo's embedded default (SQLite catalog and Airflow metadata, offline
# prices, a local lake, vLLM CPU as a local process, all under .demo/): Airflow's API server, scheduler, DAG
# processor and triggerer, bound to 127.0.0.1, until Ctrl-C stops them all.
#   scripts/ui.sh                the real model (as scripts/demo.sh); the first free port from 8080
#   scripts/ui.sh --tiny         the 4-layer tiny model instead (as scripts/demo.sh --tiny)
#   scripts/ui.sh --port 9090    this port (refused when it is taken)
#   scripts/ui.sh --unpause      the DAGs' own schedules on: the weekly campaign and catalog, the daily prices
#                                and release discovery run their latest interval at once, then on schedule
# It prints the URL and the login (Airflow's simple auth manager: the user admin and a password generated once,
# kept in the Airflow home). Without --unpause no DAG runs on a schedule; a run triggered from the form (or
# REST) runs, and the report follows each campaign. The campaign form opens with the demo's small local
# campaign (ACCELBENCH_CAMPAIGN_DEFAULTS, unless set). Logs: .demo/logs/ui/ (processes), .demo/airflow/logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
started=$(date +%s)

model_kind=real
port=
unpause=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tiny) model_kind=tiny ;;
    --port) port=${2:?ui: --port needs a port number}; shift ;;
    --unpause) unpause=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ui: unknown argument '$1' (scripts/ui.sh [--tiny] [--port N] [--unpause])" >&2; exit 2 ;;
  esac
  shift
done
say() { echo "ui: [${SECONDS}s] $*"; }
if [ -n "$port" ] && ! [[ "$port" =~ ^[0-9]+$ && "$port" -ge 1 && "$port" -le 65535 ]]; then
  echo "ui: --port '$port' is not a port number (1-65535)" >&2
  exit 2
fi

say "environments: .venv (scripts/bootstrap.sh), then .venv-vllm (scripts/vllm-env.sh); up to date: no output"
scripts/bootstrap.sh
scripts/vllm-env.sh
# The demo's environment (scripts/demo.sh): the same home, so the UI shows the demo's runs and reports.
export ACCELBENCH_HOME=${ACCELBENCH_HOME:-$repo/.demo}
export ACCELBENCH_OFFLINE=${ACCELBENCH_OFFLINE:-1}
export ACCELBENCH_EXECUTION_MODE=${ACCELBENCH_EXECUTION_MODE:-local}
export AIRFLOW_HOME=${AIRFLOW_HOME:-$ACCELBENCH_HOME/airflow}
export AIRFLOW__CORE__DAGS_FOLDER=$repo/dags
export AIRFLOW__CORE__LOAD_EXAMPLES=False
# Airflow's processes and the tasks they start run this checkout's code from its .venv: `airflow` and the
# task runner are looked up on PATH.
export PATH=$repo/.venv/bin:$PATH
export PYTHONPATH=$repo/plugins${PYTHONPATH:+:$PYTHONPATH}
logs=$ACCELBENCH_HOME/logs/ui
mkdir -p "$logs" "$AIRFLOW_HOME"
airflow=$repo/.venv/bin/airflow

# The port: --port, else 8080 when free, else one the system picks. Only 127.0.0.1 is ever bound.
free_port() {
  .venv/bin/python - "$1" <<'PY'
import socket
import sys

want = int(sys.argv[1])
with socket.socket() as s:
    try:
        s.bind(("127.0.0.1", want))
    except OSError:
        if want != 8080:  # --port: that one or none
            sys.exit(f"ui: port {want} on 127.0.0.1 is taken (another --port, or stop what holds it)")
        s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
PY
}
port=$(free_port "${port:-8080}")
url=http://127.0.0.1:$port
export AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__PORT=$port
export AIRFLOW__API__BASE_URL=$url
# Where the task runner reaches the API server: Airflow's default assumes port 8080.
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL=$url/execution/
export AIRFLOW__CORE__EXECUTOR=LocalExecutor
export AIRFLOW__CORE__PARALLELISM=${AIRFLOW__CORE__PARALLELISM:-4}
# Schedules: off unless --unpause (a DAG parsed for the first time is paused until this script unpauses it; no
# catch-up either way). Without them every DAG is unpaused, so that a triggered run runs (Airflow starts no run
# of a paused DAG) and the report follows each campaign (its asset schedule).
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=True
export AIRFLOW__SCHEDULER__CATCHUP_BY_DEFAULT=False
if [ "$unpause" = 1 ]; then
  export ACCELBENCH_SCHEDULES=true
else
  export ACCELBENCH_SCHEDULES=false
fi
# The DAG files are parsed at the start, then every 10 minutes: a campaign measures this machine, and a parse
# of every file each 30 s (Airflow's default) takes its CPUs.
export AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL=${AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL:-600}
# Login: Airflow's simple auth manager, the user admin with a password generated once and kept in the home.
user=admin
passwords=$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=$user:admin
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=$passwords
.venv/bin/python - "$passwords" "$user" <<'PY'
import json
import secrets
import sys
from pathlib import Path

path, user = Path(sys.argv[1]), sys.argv[2]
known = json.loads(path.read_text()) if path.is_file() and path.read_text().strip() else {}
if user not in known:
    known[user] = secrets.token_urlsafe(12)
    path.write_text(json.dumps(known) + "\n")
path.chmod(0o600)
PY

# The campaign form's defaults: the demo's campaign on its model, one workload (fixed), unless set already.
if [ -z "${ACCELBENCH_CAMPAIGN_DEFAULTS:-}" ]; then
  say "the model ($model_kind, as scripts/demo.sh; log: $logs/model.log)"
  scripts/demo-model.sh "$model_kind" >"$logs/model.txt" 2>"$logs/model.log" || {
    echo "ui: the model could not be made ready; last lines of $logs/model.log:" >&2
    tail -n 40 "$logs/model.log" >&2
    exit 1
  }
  { read -r model; read -r served; read -r about; } <"$logs/model.txt"
  say "model: $about"
  ACCELBENCH_CAMPAIGN_DEFAULTS=$(printf '{"model": "%s", "instance_types": ["m8g.xlarge"], "concurrency": [1, 2, 4], "repeats": 2, "prompts_per_level": 10, "input_len": 64, "output_len": 32, "extra_engine_args": ["--enforce-eager"], "execution_mode": "local"}' "$model")
  export ACCELBENCH_CAMPAIGN_DEFAULTS
fi
say "the campaign form's defaults: $ACCELBENCH_CAMPAIGN_DEFAULTS"

say "home $ACCELBENCH_HOME; Airflow's metadata database (airflow db migrate)"
"$airflow" db migrate >"$logs/airflow-db-migrate.log" 2>&1 || {
  echo "ui: airflow db migrate failed; last lines of $logs/airflow-db-migrate.log:" >&2
  tail -n 40 "$logs/airflow-db-migrate.log" >&2
  exit 1
}
# A DAG left unpaused with its schedule on (by --unpause, or parsed by scripts/demo.sh's `dags test`) would
# start its scheduled run before the DAG processor has parsed it again without one: paused until then.
unpaused=$(.venv/bin/python -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from dag where not is_paused").fetchone()[0])' "$AIRFLOW_HOME/airflow.db" 2>/dev/null || echo 1)
if [ "$unpause" = 0 ] && [ "$unpaused" != 0 ]; then
  "$airflow" dags pause --treat-dag-id-as-regex --yes '.*' >"$logs/airflow-dags-pause.log" 2>&1 || true
fi
seed=
.venv/bin/accelbench show >/dev/null 2>&1 || seed=--seed  # an empty catalog: seeded through the UI's scheduler

# Each process's output in its own log; the script stops them all on Ctrl-C (SIGINT), SIGTERM or an error.
pids=()
names=()
start() {
  local name=$1
  shift
  "$airflow" "$@" >"$logs/$name.log" 2>&1 &
  pids+=("$!")
  names+=("$name")
}

# The process tree under this script (pids), for the stop: a task's vLLM server runs in a session of its own.
descendants() {
  ps -e -o pid=,ppid= | awk -v root="$$" '
    { parent[$1] = $2 }
    END {
      found[root] = 1
      do { more = 0; for (p in parent) if (!(p in found) && (parent[p] in found)) { found[p] = 1; more = 1 } } while (more)
      for (p in found) if (p != root) print p
    }'
}
alive() {  # a zombie has ended
  local stat
  stat=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${stat#Z}" = "$stat" ]
}
stopped=0
stop() {  # $1: the signal that stopped the script (none: an error or the end)
  [ "$stopped" = 1 ] && return 0
  stopped=1
  trap '' INT TERM  # a second Ctrl-C does not cut the clean-up short
  [ "${#pids[@]}" -gt 0 ] || return 0
  say "stopping Airflow (API server, scheduler, DAG processor, triggerer) and what they started"
  local tree left p
  tree=$(descendants)
  if [ "${1:-}" = INT ]; then
    # Ctrl-C in a terminal reached every process of the group already; Airflow takes a second signal as
    # "stop at once" (the triggerer kills its triggers), so they get 5 s to stop on the first.
    for _ in $(seq 10); do
      left=
      for p in "${pids[@]}"; do alive "$p" && left="$left $p"; done
      [ -z "$left" ] && break
      sleep 0.5
    done
  fi
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 60); do  # 30 s for a clean stop
    left=
    for p in $tree; do alive "$p" && left="$left $p"; done
    [ -z "$left" ] && break
    sleep 0.5
  done
  if [ -n "$left" ]; then
    say "still running after 30 s, killed:$(for p in $left; do printf ' %s (%s)' "$p" "$(ps -o comm= -p "$p" 2>/dev/null)"; done)"
    # shellcheck disable=SC2086  # one pid per word
    kill -KILL $left 2>/dev/null || true
  fi
  wait 2>/dev/null || true
  say "stopped: nothing it started is running"
}
trap 'stop INT; exit 130' INT
trap 'stop TERM; exit 143' TERM
trap stop EXIT

say "starting Airflow on $url (logs: $logs)"
start api-server api-server --host 127.0.0.1 --port "$port" --workers 1
start scheduler scheduler --skip-serve-logs
start dag-processor dag-processor
start triggerer triggerer --skip-serve-logs

session=(.venv/bin/python scripts/ui_session.py --url "$url" --user "$user" --passwords "$passwords"
  --started "$started" --logs "$logs" --dags "$AIRFLOW__CORE__DAGS_FOLDER" $seed)
for p in "${pids[@]}"; do session+=(--pid "$p"); done
"${session[@]}" &
helper=$!
rc=0
wait "$helper" || rc=$?
if [ "$rc" != 0 ]; then
  for i in "${!pids[@]}"; do
    if ! alive "${pids[$i]}"; then
      echo "ui: the ${names[$i]} stopped; last lines of $logs/${names[$i]}.log:" >&2
      tail -n 30 "$logs/${names[$i]}.log" >&2
    fi
  done
  exit 1
fi
say "Ctrl-C stops everything"

# Until Ctrl-C, or until one of them stops on its own (then the others too).
rc=0
wait -n "${pids[@]}" || rc=$?
for i in "${!pids[@]}"; do
  if ! alive "${pids[$i]}"; then
    echo "ui: the ${names[$i]} stopped (exit $rc); last lines of $logs/${names[$i]}.log:" >&2
    tail -n 30 "$logs/${names[$i]}.log" >&2
  fi
done
exit 1
