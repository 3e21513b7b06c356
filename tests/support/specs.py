"""Small benchmark specs and campaign confs on the tiny model, shared by the vLLM and DAG tests."""

from __future__ import annotations

from pathlib import Path

from accelbench.core.spec import BenchmarkSpec, LoadPlan, ServerSpec
from accelbench.local.tiny_model import server_spec as tiny_spec
from accelbench.report.tables.prefix_caching import PREFIX_CACHING_ON

__all__ = [
    "INPUT_LEN",
    "OUTPUT_LEN",
    "PROMPTS",
    "session_spec",
    "spec_for",
    "tiny_campaign_conf",
    "tiny_spec",
]
SESSION_MAX_MODEL_LEN = 4096  # tests/e2e/test_prefix_caching.py's 2,048-token prefix and more

INPUT_LEN, OUTPUT_LEN, PROMPTS = 32, 16, 12


def session_spec(model: Path | str) -> ServerSpec:
    """The session's server (tests/conftest.py, `vllm_server`): the tiny model, prefix caching named on and
    4,096 positions, so tests/e2e/test_prefix_caching.py measures its "on" half on it instead of starting a
    server for it. Prefix caching is vLLM's default, so the flag changes nothing for the other tests."""
    spec = tiny_spec(model)
    return spec.model_copy(
        update={
            "max_model_len": SESSION_MAX_MODEL_LEN,
            "extra_engine_args": (*spec.extra_engine_args, PREFIX_CACHING_ON),
        }
    )


def spec_for(model: Path | str, **load) -> BenchmarkSpec:
    """Two concurrency levels (1, 4) of PROMPTS requests, 2 warm-ups, 2 repeats; `load` overrides."""
    plan = LoadPlan(
        input_len=INPUT_LEN,
        output_len=OUTPUT_LEN,
        concurrency=(1, 4),
        prompts_per_level=PROMPTS,
        warmups=2,
        repeats=2,
        seed=7,
        **load,
    )
    return BenchmarkSpec(server=tiny_spec(model), load=plan, campaign_id="test-campaign")


def tiny_campaign_conf(tiny_model: Path) -> dict:
    """The smallest real campaign: one server, two levels of 6 requests on the tiny model."""
    return {
        "model": str(tiny_model),
        "instance_types": ["m8g.xlarge"],
        "concurrency": [1, 2],
        "repeats": 1,
        "prompts_per_level": 6,
        "input_len": 32,
        "output_len": 8,
        "extra_engine_args": ["--enforce-eager"],
    }
