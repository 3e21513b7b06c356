"""A tier's own server fields are a type of the tier's (ServerSpec.tier_fields), but a spec's JSON is what
it was when they were flat fields of every server: the spec ids and matrix keys of the evidence in the lakes
stay, and a spec recorded then loads into the typed fields. The flags a tier's planner sets are refused
by that tier alone: `--max-num-seqs` is the Neuron tier's compiled batch, an ordinary engine flag on CPU."""

from __future__ import annotations

import json
from typing import Any

import pytest
from accelbench.campaign.plan import Plan, RuntimeBuild, plan_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.core.problems import PlanningError
from accelbench.core.spec import BenchmarkSpec, ServerSpec, TierServerFields
from accelbench.errors import ConfigError
from accelbench.sizing.model_config import load_model_shape
from accelbench.tiers import recipe_for
from accelbench.tiers.gpu import GpuServerFields
from accelbench.tiers.neuron import NeuronServerFields
from pydantic import ValidationError

from tests.support.paths import REPO
from tests.support.planning import BUILDS, CATALOG, STORE

# Specs of a CPU, a GPU and a Neuron type dumped before the tier fields had a type of their own, with their
# spec_id and matrix_key then (the mixed campaign of tests/integration/test_mixed_tiers.py).
RECORDED = [
    json.loads(line)
    for line in (REPO / "tests" / "data" / "specs" / "tier_fields_flat.jsonl").read_text().splitlines()
]
MIXED = ["m8g.4xlarge", "g6e.xlarge", "inf2.xlarge"]


def plan(**fields: Any) -> Plan:
    req = CampaignRequest(**({"instance_types": MIXED, "model": "Qwen/Qwen2.5-0.5B-Instruct"} | fields))
    builds = {**BUILDS, "vllm-gpu": RuntimeBuild("0.11.0", digest="sha256:" + "ab" * 32)}
    return plan_campaign(
        req, CATALOG, "0.19.1", "c-mixed", lambda m: load_model_shape(m, STORE), builds=builds
    )


def problems(**fields: Any) -> dict[str, str]:
    with pytest.raises(PlanningError) as err:
        plan(**fields)
    return {p.field: f"{p.value!r}: {p.message}" for p in err.value.problems}


def test_a_recorded_spec_loads_into_its_tiers_type_and_dumps_byte_identical() -> None:
    types = {"cpu": TierServerFields, "gpu": GpuServerFields, "neuron": NeuronServerFields}
    for recorded in RECORDED:
        spec = BenchmarkSpec.model_validate_json(recorded["spec"])
        assert type(spec.server.tier_fields) is types[spec.server.accelerator_type]
        assert spec.model_dump_json() == recorded["spec"]
        assert (spec.spec_id, spec.matrix_key) == (recorded["spec_id"], recorded["matrix_key"])
        assert BenchmarkSpec.model_validate(spec.model_dump(mode="json")) == spec
    gpu, neuron = (BenchmarkSpec.model_validate_json(r["spec"]).server for r in RECORDED[1:])
    assert gpu.tier_fields == GpuServerFields(gpu_memory_utilization=0.9)
    assert neuron.tier_fields == NeuronServerFields(max_num_seqs=16)


def test_planned_specs_dump_their_tier_fields_flat_and_load_back() -> None:
    for spec in plan().specs:
        dumped = json.loads(spec.model_dump_json())["server"]
        assert "tier_fields" not in dumped
        assert BenchmarkSpec.model_validate_json(spec.model_dump_json()) == spec
    cpu, gpu, neuron = (json.loads(s.server.model_dump_json()) for s in plan().specs)
    assert "gpu_memory_utilization" not in cpu and "max_num_seqs" not in cpu
    assert gpu["gpu_memory_utilization"] == 0.9 and "max_num_seqs" not in gpu
    assert neuron["max_num_seqs"] == 16 and "gpu_memory_utilization" not in neuron


def test_a_tier_field_is_checked_by_its_tiers_type_and_refused_on_another_tier() -> None:
    fields = json.loads(RECORDED[1]["spec"])["server"]
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        ServerSpec.model_validate(fields | {"gpu_memory_utilization": 1.5})
    with pytest.raises(ValidationError, match="max_num_seqs"):  # a Neuron field on a GPU server
        ServerSpec.model_validate(fields | {"max_num_seqs": 8})
    cpu = json.loads(RECORDED[0]["spec"])["server"]
    with pytest.raises(ValidationError, match="gpu_memory_utilization"):
        ServerSpec.model_validate(cpu | {"gpu_memory_utilization": 0.9})


def test_max_num_seqs_passes_through_on_cpu_and_gpu_and_is_refused_on_neuron() -> None:
    # vLLM's scheduler flag (`vllm serve --help=all`, EngineArgs.max_num_seqs) on every platform; only the
    # Neuron tier's planner sets it (the compiled batch).
    cpu_gpu = plan(instance_types=["m8g.4xlarge", "g6e.xlarge"], extra_engine_args=["--max-num-seqs=4"])
    for spec in cpu_gpu.specs:
        args = recipe_for(spec.server.runtime).args(spec.server)
        assert args.count("--max-num-seqs=4") == 1 and "--max-num-seqs" not in args
    found = problems(extra_engine_args=["--max-num-seqs=4"])
    assert found == {
        "extra_engine_args[0]": "'--max-num-seqs=4': --max-num-seqs is set by the planner from the largest "
        "concurrency (the compiled batch) (the Neuron types of this campaign: inf2.xlarge)"
    }
    assert "extra_engine_args[0]" in problems(
        instance_types=["inf2.xlarge"], extra_engine_args=["--max_num_seqs"]
    )


def test_a_neuron_server_renders_its_compiled_batch_and_refuses_none() -> None:
    neuron = BenchmarkSpec.model_validate_json(RECORDED[2]["spec"]).server
    args = recipe_for(neuron.runtime).args(neuron)
    assert args[args.index("--max-num-seqs") + 1] == "16"
    unset = neuron.model_copy(update={"tier_fields": NeuronServerFields()})
    with pytest.raises(ConfigError, match="compiles the model for a fixed batch"):
        recipe_for(neuron.runtime).args(unset)


def test_a_process_that_imported_no_tier_still_reads_tier_settings_and_specs() -> None:
    """Config and core sit below the tiers: a tier's setting or a GPU spec read first imports the registry."""
    import subprocess
    import sys

    code = """
import sys
from accelbench.config import Settings
from accelbench.core.spec import ServerSpec
assert "accelbench.tiers" not in sys.modules
assert Settings.from_env("vllm_cpu_image_repository").tier("cpu").vllm_cpu_image_repository
import json
spec = ServerSpec.model_validate_json(sys.argv[1])
print(type(spec.tier_fields).__name__, spec.tier_fields.gpu_memory_utilization)
"""
    flat = {
        "runtime": "vllm-gpu",
        "version": "0.32.0",
        "image": "i",
        "model": "m",
        "served_model_name": "m",
        "dtype": "bfloat16",
        "tensor_parallel_size": 1,
        "kv_cache_gib": 1,
        "max_model_len": 64,
        "instance_type": "g6e.xlarge",
        "accelerator_type": "gpu",
        "accelerator_count": 1,
        "vcpu": 4,
        "server_cpu": 3,
        "server_memory_mib": 1024,
        "model_weights_gib": 1.0,
        "gpu_memory_utilization": 0.9,
    }
    import json

    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(flat)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["GpuServerFields", "0.9"]
