"""A quantization matrix is planned as one campaign: a server per type and checkpoint, every spec naming the
reference, and every problem of a checkpoint named by the field that listed it. The checkpoints' configs are
real: tests/data/model_configs/local--smollm2-135m* are the config.json files of the embedded model's bf16
conversion and of its W8A8 checkpoint that llmcompressor wrote here (accelbench.local.quantized_model)."""

from __future__ import annotations

import pytest
from accelbench.core.server_group import ServerGroup
from accelbench.k8s.pod import build_pod_parts
from accelbench.sizing.fit import LOADGEN_QUALITY_MIB, loadgen_memory

from tests.support.planning import plan, problems

REFERENCE, W8A8 = "local/smollm2-135m", "local/smollm2-135m-w8a8"
MATRIX = {"model": REFERENCE, "quantized_models": [W8A8], "execution_mode": "local"}


def test_a_matrix_plans_a_server_per_type_and_checkpoint_each_naming_the_reference() -> None:
    result = plan(
        instance_types=["m8g.xlarge", "c8g.2xlarge"], quality_questions=80, quality_prompts=24, **MATRIX
    )
    servers = [(s.server.instance_type, s.server.model, s.server.quantization) for s in result.specs]
    assert servers == [
        ("m8g.xlarge", REFERENCE, None),
        ("c8g.2xlarge", REFERENCE, None),
        ("m8g.xlarge", W8A8, "compressed-tensors"),
        ("c8g.2xlarge", W8A8, "compressed-tensors"),
    ]
    assert {s.quality.reference for s in result.specs if s.quality} == {REFERENCE}
    assert all(
        s.quality is not None and (s.quality.questions, s.quality.prompts) == (80, 24) for s in result.specs
    )
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
    ],
)
def test_a_bad_matrix_is_refused_naming_the_field(fields: dict, field: str, why: str) -> None:
    found = problems(instance_types=["m8g.xlarge"], **(MATRIX | fields))
    assert why in found.get(field, ""), found


def test_a_kubernetes_matrix_gives_its_load_generator_room_for_lm_eval() -> None:
    """In kubernetes mode the benchmark pod's driver runs the quality step (the image's lm-eval): its
    container gets LOADGEN_QUALITY_MIB more, and the node budget leaves the server that much less than a
    campaign of the same model without a matrix."""
    matrix = plan(instance_types=["m8g.xlarge"], **(MATRIX | {"execution_mode": "kubernetes"}))
    plain = plan(instance_types=["m8g.xlarge"], model=REFERENCE, execution_mode="kubernetes")
    assert all(s.quality is not None for s in matrix.specs) and len(matrix.specs) == 2
    spec, alone = matrix.specs[0], plain.specs[0]
    parts = build_pod_parts(ServerGroup(specs=(spec,)))
    expected = loadgen_memory(spec.load) + LOADGEN_QUALITY_MIB
    assert parts.loadgen_resources.limits == {"cpu": "1", "memory": f"{expected}Mi"}
    assert (
        build_pod_parts(ServerGroup(specs=(alone,))).loadgen_resources.limits["memory"]
        == f"{loadgen_memory(alone.load)}Mi"
    )
    assert alone.server.server_memory_mib - spec.server.server_memory_mib == LOADGEN_QUALITY_MIB
