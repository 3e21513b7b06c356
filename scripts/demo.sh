#!/usr/bin/env bash
# Run a whole campaign on the embedded default: SQLite catalog, offline prices, a local lake, vLLM CPU
# as a local process on a small model built here (no AWS, no cluster, no model hub), all through real
# Airflow (`airflow dags test`): the same DAGs and code path as production, in local mode.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

scripts/bootstrap.sh
scripts/vllm-env.sh
export ACCELBENCH_HOME=${ACCELBENCH_HOME:-$repo/.demo}
export ACCELBENCH_OFFLINE=${ACCELBENCH_OFFLINE:-1}
export AIRFLOW_HOME=${AIRFLOW_HOME:-$ACCELBENCH_HOME/airflow}
export AIRFLOW__CORE__DAGS_FOLDER=$repo/dags
export AIRFLOW__CORE__LOAD_EXAMPLES=False
logs=$ACCELBENCH_HOME/logs
mkdir -p "$logs"
airflow=.venv/bin/airflow

echo "demo: home $ACCELBENCH_HOME (Airflow metadata and task output under it)"
"$airflow" db migrate >"$logs/airflow-db-migrate.log" 2>&1

run_dag() {
  local dag=$1 log=$logs/$1.log conf=${2:-"{}"}
  echo "demo: airflow dags test $dag (log: $log)"
  "$airflow" dags test "$dag" -c "$conf" >"$log" 2>&1 || true
  # `airflow dags test` exits 0 even when a task fails: read the run's final state.
  if ! grep -q "DagRun Finished: dag_id=$dag.*state=success" "$log"; then
    echo "demo: $dag did not succeed; last lines of its log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  grep -hoE "(instance catalog upsert|pricing refresh done): .*\[accelbench" "$log" | sed 's/ \[accelbench$//;s/^/  /' || true
}

model=$ACCELBENCH_HOME/models/accelbench-tiny-llama
if [ ! -f "$model/config.json" ]; then
  echo "demo: building a 4-layer Llama with random weights and a local tokenizer in $model"
  PYTHONPATH=$repo/plugins .venv-vllm/bin/python -m accelbench.execution.tiny_model "$model" >/dev/null 2>&1
fi

run_dag accelbench_instance_catalog
run_dag accelbench_pricing_refresh
.venv/bin/accelbench show >"$logs/catalog.txt"
head -n 4 "$logs/catalog.txt"
echo "  (the newest price of every type: $logs/catalog.txt)"
campaign_conf=$(printf '{"model": "%s", "instance_types": ["m8g.xlarge"], "concurrency": [1, 2, 4], "repeats": 2, "prompts_per_level": 20, "input_len": 64, "output_len": 32, "extra_engine_args": ["--enforce-eager"], "execution_mode": "local"}' "$model")
run_dag accelbench_cpu_campaign "$campaign_conf"
echo
echo "demo: campaign summary (from the lake):"
sed -n '/\] campaign accelbench_cpu_campaign\./,/loc=campaign.py/p' "$logs/accelbench_cpu_campaign.log" | sed 's/ \[accelbench.*$//;s/^.*\] campaign/campaign/'
echo
echo "demo: Parquet files:"
find "$ACCELBENCH_HOME/lake" -name '*.parquet' | sort | sed 's/^/  /'
echo
run_dag accelbench_cross_tier_report
html=$(grep -hoE "HTML report: [^ ]+report\.html" "$logs/accelbench_cross_tier_report.log" | tail -n 1 | sed 's/^HTML report: //')
if [ -z "$html" ] || [ ! -f "$html" ]; then
  echo "demo: the report DAG did not say where its HTML is; see $logs/accelbench_cross_tier_report.log" >&2
  exit 1
fi
echo "demo: the answer (from the report's task log):"
sed -n '/ report [0-9TZ]*: [0-9]* points/,/report files:/p' "$logs/accelbench_cross_tier_report.log" | sed '1d;$d' | sed 's/ \[accelbench.*$//;s/^/  /'
echo "demo: report (tables as Parquet and CSV beside it; opens offline in any browser):"
echo "  $html"
echo "demo: this run measured on this machine ($(uname -m), $(nproc) vCPU), not on m8g.xlarge: its rows say"
echo "  'local: ...' and are never priced. Each run of the demo adds a campaign to $ACCELBENCH_HOME/lake, and"
echo "  the report pools the repeats of a point across campaigns (its 'Campaigns' column says how many)."
echo "  To start from an empty lake: rm -rf '$ACCELBENCH_HOME/lake' (or set ACCELBENCH_HOME to a new folder)."
