"""A quantization matrix: the request's quantized checkpoints of its model, each planned as the request with
that model, and the quality plan every spec of the campaign gets, naming `model` as the reference.

The reference is the unquantized checkpoint (bf16 on CPU): each configuration's next-token distributions and
accuracy are compared with its after the load levels (accelbench.loadgen.quality_step), so the reference must
be unquantized, each other checkpoint quantized, and all of them the same network (architecture and shape)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from accelbench.campaign.request import CampaignRequest
from accelbench.core.model_origin import model_identity
from accelbench.core.problems import Problem
from accelbench.core.spec import BenchmarkSpec, QualityPlan
from accelbench.sizing.model_config import ModelShape

# What makes two checkpoints the same network: a quantized checkpoint keeps these of its reference.
SAME_NETWORK = ("architecture", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "vocab_size")


def configurations(req: CampaignRequest) -> Iterator[tuple[str, CampaignRequest]]:
    """(the field that names it, the request with that model): `model` first, then each checkpoint. A
    checkpoint's own quantization is read from its config, so the request's `quantization` (a claim about
    `model`) is not carried over; the list is (the servers' context makes room for the quality task)."""
    yield "model", req
    for i, checkpoint in enumerate(req.quantized_models):
        update = {"model": checkpoint, "quantization": "none"}
        yield f"quantized_models[{i}]", req.model_copy(update=update)


def renamed(problem: Problem, where: str, model: str) -> Problem:
    """A checkpoint's problem on `model` names the field that listed it."""
    if where == "model" or problem.field != "model":
        return problem
    return Problem(where, model, problem.message)


def matrix_problems(req: CampaignRequest, shapes: Mapping[str, ModelShape | None]) -> list[Problem]:
    """The reference unquantized, each checkpoint quantized and the same network."""
    problems = []
    reference = shapes.get("model")
    if reference is not None and reference.quantization is not None:
        q = reference.quantization
        why = (
            f"the reference of a quantization matrix is unquantized; {req.model} is {q.method} {q.scheme}: "
            "name its bf16 checkpoint as model"
        )
        problems.append(Problem("model", req.model, why))
    for i, checkpoint in enumerate(req.quantized_models):
        where = f"quantized_models[{i}]"
        shape = shapes.get(where)
        if shape is None or reference is None:
            continue  # refused already, with why
        if shape.quantization is None:
            why = "has no quantization_config in its config.json: not a quantized checkpoint"
            problems.append(Problem(where, checkpoint, why))
        differ = [
            f"{k} {getattr(shape, k)} vs {getattr(reference, k)}"
            for k in SAME_NETWORK
            if getattr(shape, k) != getattr(reference, k)
        ]
        if differ:
            why = f"is not a checkpoint of {req.model}: {', '.join(differ)}"
            problems.append(Problem(where, checkpoint, why))
    return problems


def with_quality(req: CampaignRequest, specs: Sequence[BenchmarkSpec]) -> list[BenchmarkSpec]:
    """Every spec of the matrix with the quality plan naming the reference by its id (what the rows name it
    by: the same from any checkout)."""
    plan = QualityPlan(
        reference=model_identity(req.model).model_id,
        prompts=req.quality_prompts,
        questions=req.quality_questions,
    )
    return [spec.model_copy(update={"quality": plan}) for spec in specs]
