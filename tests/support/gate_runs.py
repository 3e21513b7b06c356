"""Lake `runs` rows of a version-over-version comparison, for the regression gate's tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


def gate_run(
    version: str, level: int, repeat: int, out: float, tpot: float = 10.0, **kw: Any
) -> dict[str, Any]:
    """One ok repeat on m8g.xlarge at concurrency `level` with output throughput `out`; `kw` adds or
    replaces columns (`suffix` goes on the run id)."""
    return {
        "run_id": f"{version}/c{level}-r{repeat}{kw.pop('suffix', '')}",
        "accelerator_type": "cpu",
        "instance_type": "m8g.xlarge",
        "model": MODEL,
        "quantization": None,
        "vllm_version": version,
        "level_kind": "concurrency",
        "level_value": float(level),
        "repeat": repeat,
        "status": "ok",
        "output_throughput": out,
        "total_token_throughput": out * 2,
        "p99_ttft_ms": 100.0,
        "p99_tpot_ms": tpot,
        "completed": 200,
        "accelerator_count": 0,
        "started_at": datetime(2026, 11, 20, tzinfo=UTC),
    } | kw
