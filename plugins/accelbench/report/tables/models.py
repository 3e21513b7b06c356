"""Each model the report's runs measured, with where it came from and how many runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from accelbench.lake.schemas import LakeRow
from accelbench.report.labels import short_model
from accelbench.report.table import Inputs, Section, Table


@dataclass(frozen=True, slots=True)
class ModelRow:
    """A model the report's runs measured: its short name, full id, where it came from and how many runs."""

    model_short: str
    model: str
    model_origin: str
    runs: int


def models(runs: Iterable[LakeRow]) -> list[ModelRow]:
    """Each model the report's runs measured, with where it came from (`runs.model_origin`: a converted
    folder's provenance; "not recorded" for a model-store id or older rows) and how many runs: what a
    reader needs to trust a figure of a model nobody named by its full path."""
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for r in runs:
        seen[(str(r.get("model") or "?"), r.get("model_origin") or "not recorded")] += 1
    return [  # a converted folder's name is a hash: its origin names the model
        ModelRow(
            model_short=origin.split(" (")[0] if origin != "not recorded" else short_model(model),
            model=model,
            model_origin=origin,
            runs=n,
        )
        for (model, origin), n in sorted(seen.items())
    ]


def _rows(inputs: Inputs) -> list[ModelRow]:
    return models(inputs.runs)


TABLE = Table(
    name="models",
    row=ModelRow,
    compute=_rows,
    columns=("model_short", "model_origin", "runs"),
    section=Section(
        heading="Models",
        table_id="models-table",
        text="""\
<p>Each model measured and where it came from (the provenance a converted folder carries; "not recorded"
for a model served by its id).</p>""",
    ),
)
