"""A quantization matrix is planned as one campaign: a server per type and checkpoint, every spec naming the
reference, and every problem of a checkpoint named by the field that listed it. The checkpoints' configs are
real: tests/data/model_configs/local--smollm2-135m* are the config.json files of the embedded model's bf16
conversion and of its W8A8 checkpoint that llmcompressor wrote here (accelbench.local.quantized_model)."""

from __future__ import annotations

import pytest

from tests.support.planning import plan, problems

REFERENCE, W8A8 = "local/smollm2-135m", "local/smollm2-135m-w8a8"
MATRIX = {"model": REFERENCE, "quantized_models": [W8A8], "execution_mode": "local"}


def test_a_matrix_plans_a_server_per_type_and_checkpoint_each_naming_the_reference() -> None:
    result = plan(instance_types=["m8g.xlarge", "c8g.2xlarge"], quality_questions=80, **MATRIX)
    servers = [(s.server.instance_type, s.server.model, s.server.quantization) for s in result.specs]
    assert servers == [
        ("m8g.xlarge", REFERENCE, None),
        ("c8g.2xlarge", REFERENCE, None),
        ("m8g.xlarge", W8A8, "compressed-tensors"),
        ("c8g.2xlarge", W8A8, "compressed-tensors"),
    ]
    assert {s.quality.reference for s in result.specs if s.quality} == {REFERENCE}
    assert all(s.quality is not None and s.quality.questions == 80 for s in result.specs)
    assert len({s.spec_id for s in result.specs}) == 4
    # The W8A8 checkpoint's weights are planned at a byte per linear weight, about half the reference's.
    weights = {s.server.model: s.server.model_weights_gib for s in result.specs}
    assert 0.4 < weights[W8A8] / weights[REFERENCE] < 0.75


def test_a_campaign_without_a_matrix_has_no_quality_plan_and_keeps_its_spec_ids() -> None:
    plain = plan(instance_types=["m8g.xlarge"], model=REFERENCE)
    assert plain.specs[0].quality is None and "quality" not in plain.specs[0].model_dump()


@pytest.mark.parametrize(
    ("fields", "field", "why"),
    [
        ({"model": W8A8, "quantized_models": [REFERENCE]}, "model", "the reference of a quantization matrix"),
        ({"quantized_models": [REFERENCE + "-copy"]}, "quantized_models[0]", "no config.json found"),
        ({"quantized_models": [REFERENCE]}, "quantized_models[0]", "has no quantization_config"),
        ({"quantized_models": ["local/tiny-llama"]}, "quantized_models[0]", "is not a checkpoint of"),
        ({"execution_mode": "kubernetes"}, "quantized_models", "execution_mode=local"),
    ],
)
def test_a_bad_matrix_is_refused_naming_the_field(fields: dict, field: str, why: str) -> None:
    found = problems(instance_types=["m8g.xlarge"], **(MATRIX | fields))
    assert why in found.get(field, ""), found
