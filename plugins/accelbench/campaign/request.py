"""What a user asks for (UI form, REST, cron defaults), before any catalog or model lookup."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, field_validator

from accelbench.core.modes import ExecutionMode
from accelbench.core.spec import Runtime
from accelbench.sizing.fit import LOADGEN_MAX_IN_FLIGHT

Quantization = Literal["none", "int8", "int4"]
DeploymentMode = Literal["single", "distributed", "disaggregated", "data-parallel"]


class CampaignRequest(BaseModel):
    """Fields mirror the DAG params; their names are what error messages cite."""

    model_config = ConfigDict(extra="forbid")

    instance_types: list[str] = Field(min_length=1)
    model: str = Field(min_length=1)
    model_revision: str | None = None
    served_model_name: str | None = None
    runtime: Runtime = "vllm-cpu"
    version: str | None = None
    dtype: str = "bfloat16"
    quantization: Quantization = "none"
    kv_cache_dtype: Literal["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"] = "auto"
    deployment_mode: DeploymentMode = "single"
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    input_len: int = Field(default=512, ge=1)
    output_len: int = Field(default=128, ge=1)
    concurrency: list[Annotated[int, Field(ge=1, le=LOADGEN_MAX_IN_FLIGHT)]] = Field(
        default_factory=lambda: [1, 4, 16], min_length=1
    )
    request_rates: list[PositiveFloat] = Field(default_factory=list)
    prompts_per_level: int = Field(default=200, ge=1)
    repeats: int = Field(default=1, ge=1)
    # Latency SLOs: reports pick the best level whose p99 holds them; the load generator counts
    # requests within them as goodput.
    slos: dict[Literal["ttft_p99_ms", "tpot_p99_ms", "e2el_p99_ms"], PositiveFloat] = Field(
        default_factory=dict
    )
    seed: int = 0
    extra_engine_args: list[str] = Field(default_factory=list)
    # Where the benchmarks run; None = ACCELBENCH_EXECUTION_MODE (checked here, used by the operator).
    execution_mode: ExecutionMode | None = None

    @field_validator("instance_types", "concurrency", "request_rates")
    @classmethod
    def _unique(cls, values: list) -> list:  # type: ignore[type-arg]
        """Duplicates would give two runs the same id (and the same lake files)."""
        if len(set(values)) != len(values):
            raise ValueError("lists each value more than once")
        return values

    @property
    def context_len(self) -> int:
        """--max-model-len: input + output, plus headroom because the random dataset's prompts can
        re-tokenize a little longer than asked, and a prompt at the limit would cut the output short."""
        return self.input_len + self.output_len + max(64, self.input_len // 10)
