"""An A/B comparison (`CampaignRequest.variants`): each variant planned as the request with what it changes,
and its servers interleaved in rounds.

Rounds: every round runs one server of each variant, in the variants' order (a1, b1, a2, b2, ...), so the
host's drift over the campaign falls on every variant alike; a variant's `repeats` of each level are split
over the rounds as evenly as they go (5 repeats in 2 rounds: 3, then 2), numbered on from round to round,
so a variant's rounds are one point's repeats. The benchmark tasks are mapped in this order and start in it
(one at a time in local mode, where the benchmark pool has one slot): Airflow's scheduler queues a mapped
task's instances of equal priority weight by map index (`SchedulerJobRunner`'s
`order_by(-priority_weight, logical_date, map_index)`, in Airflow 3.3's source).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from accelbench.campaign.request import CampaignRequest, Variant
from accelbench.core.problems import Problem
from accelbench.core.spec import BenchmarkSpec, VariantRound


def comparison_name(req: CampaignRequest) -> str:
    """The comparison's label, its variants' names in order: "a vs b"; the first is the baseline."""
    return " vs ".join(v.name for v in req.variants)


def variant_problems(req: CampaignRequest) -> list[Problem]:
    """What an A/B comparison cannot be combined with, each naming its field."""
    if not req.variants:
        return []
    problems = []
    if req.quantized_models:
        why = "a quantization matrix and an A/B comparison are separate campaigns: a variant may name a model"
        problems.append(Problem("quantized_models", req.quantized_models, why))
    if req.load_mode == "search":
        why = (
            "an A/B comparison compares the variants' fixed levels: a search chooses each variant's own loads"
        )
        problems.append(Problem("load_mode", req.load_mode, why))
    if len(req.instance_types) > 1:
        why = (
            "an A/B comparison runs its variants on one instance type: name one (a variant may set its own "
            "instance_type)"
        )
        problems.append(Problem("instance_types", req.instance_types, why))
    if req.rounds > req.repeats:
        why = f"each round measures at least one repeat of every level: at most repeats={req.repeats}"
        problems.append(Problem("rounds", req.rounds, why))
    return problems


def _as_request(req: CampaignRequest, variant: Variant) -> CampaignRequest:
    """The request with what `variant` changes, and no variants."""
    update: dict[str, object] = {"variants": []}
    for name in ("extra_engine_args", "model", "quantization"):
        if (value := getattr(variant, name)) is not None:
            update[name] = value
    if variant.versions is not None:
        update["versions"] = req.versions | variant.versions
    if variant.instance_type is not None:
        update["instance_types"] = [variant.instance_type]
    return req.model_copy(update=update)


def variant_requests(req: CampaignRequest) -> Iterator[tuple[str, CampaignRequest]]:
    """(the field that names the variant, the request as that variant), in the variants' order."""
    for i, variant in enumerate(req.variants):
        yield f"variants[{i}]", _as_request(req, variant)


def renamed(problem: Problem, where: str, variant: Variant) -> Problem:
    """A variant's problem on a field it changed names the variant's field."""
    base = problem.field.split("[", 1)[0].split(".", 1)[0]
    mapped = "instance_type" if base == "instance_types" else base
    if mapped in {"extra_engine_args", "model", "quantization", "versions", "instance_type"} and (
        getattr(variant, mapped) is not None
    ):
        # The variant names one type (`instance_type`), which the request it is planned as lists first.
        field = mapped if base == "instance_types" else problem.field
        return Problem(f"{where}.{field}", problem.value, problem.message)
    return problem


def split_repeats(repeats: int, rounds: int) -> list[int]:
    """`repeats` over `rounds` as evenly as they go, the larger shares first: (5, 2) -> [3, 2]."""
    return [repeats // rounds + (1 if k < repeats % rounds else 0) for k in range(rounds)]


def interleaved(req: CampaignRequest, specs: Sequence[Sequence[BenchmarkSpec]]) -> list[BenchmarkSpec]:
    """Each variant's specs (in the variants' order) as rounds: a round runs every variant's specs once,
    with its share of the repeats, numbered on from the round before."""
    comparison = comparison_name(req)
    shares = split_repeats(req.repeats, req.rounds)
    out = []
    for k, share in enumerate(shares):
        first = sum(shares[:k])
        for variant, own in zip(req.variants, specs, strict=True):
            for spec in own:
                mark = VariantRound(
                    comparison=comparison, name=variant.name, round=k, rounds=len(shares), first_repeat=first
                )
                load = spec.load.model_copy(update={"repeats": share})
                out.append(spec.model_copy(update={"load": load, "variant": mark}))
    return out


def rounds_words(specs: Sequence[BenchmarkSpec]) -> str | None:
    """The plan's rounds in words, for the plan task's log: "A/B comparison a vs b: 2 rounds of a, b; each
    variant's repeats per round 2, 1 (repeats numbered on)"; None without a comparison."""
    marked = [s.variant for s in specs if s.variant is not None]
    if not marked:
        return None
    names = list(dict.fromkeys(v.name for v in marked))
    shares = {s.variant.round: s.load.repeats for s in specs if s.variant is not None}
    order = ", ".join(f"{v.name}{v.round + 1}" for v in marked)
    return (
        f"A/B comparison {marked[0].comparison}: {marked[0].rounds} round(s) of {', '.join(names)}, servers "
        f"in this order: {order}; each variant's repeats per round: "
        f"{', '.join(str(shares[k]) for k in sorted(shares))} (numbered on from round to round)"
    )
