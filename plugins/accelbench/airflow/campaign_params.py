"""The campaign DAGs' Params, generated from `CampaignRequest` (accelbench.campaign.request).

Each field's type, default, bounds, enum, description and form extras (`section`, `uniqueItems`, ...)
are declared once, in the model; its defaults read from the environment are applied once, in
`form_defaults`. Here only the narrowing of the campaign form (the seed file's instance types: values the
planner would refuse otherwise) and the params tables of docs/reference/dag-params.md (every field of the
model, those the form hides apart, with why: `dag_defaults.FORM_HIDDEN_FIELDS`), rendered from the same
schema without importing Airflow. Parse-time safe: the environment and the seed
file are read, no database or network.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from accelbench.airflow.dag_defaults import (
    CAMPAIGN_FORM_FIELDS,
    FORM_HIDDEN_FIELDS,
    catalog_instance_types,
    instance_type_items,
)
from accelbench.campaign.request import CampaignRequest, field_extra, form_defaults

if TYPE_CHECKING:
    from airflow.sdk import Param

# What the model's JSON schema says that is no JSON-schema keyword of the form, or goes elsewhere.
NOT_SCHEMA = {"default", "description", "title", "form_default", "default_env"}
# docs/reference/dag-params.md holds the table between <!-- generated:dag-params --> and its closing marker.
MARKER = "dag-params"


class Narrowing:
    """A stricter schema for one field of one form (never looser than the model): `schema()` is read when
    the DAG file is parsed; `note` says it in the reference table."""

    def __init__(self, note: str, schema: Callable[[], dict[str, Any]]) -> None:
        self.note, self.schema = note, schema


# The campaign form offers the catalog's types, of every tier (the runtime follows each type's tier).
FORM_NARROWING = {
    "instance_types": Narrowing(
        "the seed file's types of every tier (`ACCELBENCH_SEED_FILE`); Graviton2 refused, with the reason",
        lambda: {"items": instance_type_items(catalog_instance_types())},
    ),
}


@cache
def _model_schema() -> dict[str, Any]:
    """CampaignRequest's JSON schema, made once a process: pydantic builds the whole model's for each field
    asked (~70 a parse of the DAG folder), which was half of the folder's parse time (~0.45 s of ~0.9)."""
    return CampaignRequest.model_json_schema()


def field_schema(name: str) -> dict[str, Any]:
    """One field's JSON schema as a form's Param takes it: the model's, with `X | None` as a nullable type
    (non-null when the environment gives the default) and a dict of Literal keys as named properties."""
    schema = copy.deepcopy(_model_schema()["properties"][name])
    info, extra = CampaignRequest.model_fields[name], field_extra(name)
    options = schema.pop("anyOf", None)
    if options:
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) != 1:
            raise TypeError(f"CampaignRequest.{name}: a union the form cannot show ({options})")
        schema.update(kept[0])
        if len(kept) < len(options) and "default_env" not in extra:
            schema["type"] = ["null", schema["type"]]
    keys = schema.pop("propertyNames", None)
    if keys is not None:
        values = schema.pop("additionalProperties", {})
        schema["properties"] = {key: dict(values) for key in keys["enum"]}
        schema["additionalProperties"] = False
    out = {k: v for k, v in schema.items() if k not in NOT_SCHEMA}
    if info.title:  # only a title set on the field: pydantic's own would rename the form's labels
        out["title"] = info.title
    return out


def description(name: str) -> str:
    text = CampaignRequest.model_fields[name].description or ""
    variable = field_extra(name).get("default_env")
    return f"{text} (default: `{variable}`)" if variable else text


def campaign_params(
    fields: Iterable[str] = CAMPAIGN_FORM_FIELDS, narrowing: Mapping[str, Narrowing] | None = None
) -> dict[str, Param]:
    """The DAG's `params=`: one Param per field, in order, with the model's schema and the form's default."""
    from airflow.sdk import Param  # here: the reference table renders without Airflow

    names = list(fields)
    defaults = form_defaults(names)
    params = {}
    for name in names:
        schema = field_schema(name)
        if narrowing and name in narrowing:
            schema |= narrowing[name].schema()
        params[name] = Param(defaults[name], description=description(name), **schema)
    return params


def campaign_form_params() -> dict[str, Param]:
    """The params of `accelbench_campaign`, and of its old id `accelbench_cpu_campaign` (the same DAG)."""
    return campaign_params(CAMPAIGN_FORM_FIELDS, FORM_NARROWING)


# ---- the reference table ---------------------------------------------------------------------------


def _code(value: Any) -> str:
    return f"`{json.dumps(value) if not isinstance(value, str) else value}`"


def _type_text(schema: Mapping[str, Any]) -> str:
    kinds = schema.get("type", "any")
    kinds = [k for k in kinds if k != "null"] if isinstance(kinds, list) else [kinds]
    text = " or ".join(kinds)
    if "array" in kinds and "type" in schema.get("items", {}):
        text = f"array of {schema['items']['type']}"
    if isinstance(schema.get("type"), list) and "null" in schema["type"]:
        text += ", or empty"
    return text


def _bounds(schema: Mapping[str, Any]) -> list[str]:
    out = []
    if "enum" in schema:
        out.append("one of " + ", ".join(_code(v) for v in schema["enum"]))
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        out.append(f"{low:,} to {high:,}")
    elif low is not None:
        out.append(f"at least {low:,}")
    elif high is not None:
        out.append(f"at most {high:,}")
    if "exclusiveMinimum" in schema:
        out.append(f"above {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema:
        out.append(f"below {schema['exclusiveMaximum']}")
    if "minLength" in schema or "maxLength" in schema:
        out.append(f"{schema.get('minLength', 0)} to {schema['maxLength']} characters")
    if "pattern" in schema:
        out.append(f"pattern `{schema['pattern']}`")
    return out


def _limits(name: str, schema: Mapping[str, Any], narrowing: Mapping[str, Narrowing]) -> str:
    out = _bounds(schema)
    if "minItems" in schema:
        out.append(f"at least {schema['minItems']} item(s)")
    if schema.get("uniqueItems"):
        out.append("no duplicates")
    if item := _bounds(schema.get("items", {})):
        out.append("each " + ", ".join(item))
    if "properties" in schema:
        keys = ", ".join(_code(k) for k in schema["properties"])
        values = {", ".join(_bounds(v)) for v in schema["properties"].values()}
        out.append(f"keys {keys}" + (f", each {values.pop()}" if len(values) == 1 else ""))
    if name in narrowing:
        out.append(f"this form: {narrowing[name].note}")
    return "; ".join(out) or "-"


def _default_text(name: str) -> str:
    default = form_defaults([name], from_env=False)[name]
    shown = "empty" if default is None else _code(default)
    variable = field_extra(name).get("default_env")
    return f"`{variable}` (unset: {shown})" if variable else shown


def request_fields(
    shown: Iterable[str] = CAMPAIGN_FORM_FIELDS, hidden: Mapping[str, str] = FORM_HIDDEN_FIELDS
) -> tuple[list[str], list[str]]:
    """Every field of CampaignRequest (what a run's conf may set, by REST as by the form): those the form
    shows, in its order, and those it hides, in the model's order. A ValueError, naming them, for a field in
    neither list or in both, or a name that is no field: a new field must be placed."""
    every, shown = list(CampaignRequest.model_fields), list(shown)
    problems = [
        f"{n}: neither shown nor in FORM_HIDDEN_FIELDS" for n in every if n not in shown and n not in hidden
    ]
    problems += [f"{n}: both shown and in FORM_HIDDEN_FIELDS" for n in shown if n in hidden]
    problems += [f"{n}: not a field of CampaignRequest" for n in [*shown, *hidden] if n not in every]
    if problems:
        raise ValueError(
            "the campaign form's fields (accelbench.airflow.dag_defaults): " + "; ".join(problems)
        )
    return shown, [n for n in every if n in hidden]


def _row(name: str, narrowing: Mapping[str, Narrowing], *more: str) -> str:
    schema = field_schema(name)
    cells = [f"`{name}`", _type_text(schema), _default_text(name), _limits(name, schema, narrowing)]
    cells += [CampaignRequest.model_fields[name].description or "", *more]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def render_dag_params(
    narrowing: Mapping[str, Narrowing] = FORM_NARROWING, hidden: Mapping[str, str] = FORM_HIDDEN_FIELDS
) -> str:
    """Every field of CampaignRequest as markdown (param, type, default, limits, description): a table of the
    fields the campaign form shows, then one of those it hides, with why. What docs/reference/dag-params.md
    holds between its `dag-params` markers."""
    shown, hidden_names = request_fields(CAMPAIGN_FORM_FIELDS, hidden)
    rows = [
        "| param | type | default | limits | what it is |",
        "|---|---|---|---|---|",
        *(_row(name, narrowing) for name in shown),
        "",
        "**Hidden by the form** (REST and `--conf` only): a run takes the default below unless its conf sets "
        "the field. The trigger does not check these (Airflow passes conf keys the form does not declare "
        "through); the `plan` task does, and fails naming the field.",
        "",
        "| param | type | default | limits | what it is | why the form hides it |",
        "|---|---|---|---|---|---|",
        *(_row(name, narrowing, hidden[name]) for name in hidden_names),
    ]
    return "\n".join(rows) + "\n"
