"""The campaign DAGs' Params come from CampaignRequest: the same defaults and limits, the same refusals,
and the reference page's table is the render of the model."""

from __future__ import annotations

import os
import re
import typing
from typing import Any

import annotated_types
import pytest
from accelbench.campaign.request import CampaignRequest, field_extra, setting_default
from pydantic import ValidationError

from tests.support.paths import DAGS, REPO

CAMPAIGN = "accelbench_campaign"
GOOD = {"instance_types": ["m8g.xlarge"], "model": "Qwen/Qwen2.5-0.5B-Instruct"}


@pytest.fixture(scope="module")
def bag(airflow_db):
    """The DAG folder parsed once, with no ACCELBENCH_* setting: the defaults are the settings' own."""
    from airflow.dag_processing.dagbag import DagBag

    with pytest.MonkeyPatch.context() as env:
        _without_settings(env)
        return DagBag(dag_folder=str(DAGS))


def _without_settings(env: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("ACCELBENCH_")]:
        env.delenv(key)


def _model_default(name: str) -> Any:
    """The model's own default; a field a request must name: its form default; one from a setting: the
    setting's default (no ACCELBENCH_* is set while the DAGs are parsed)."""
    info, extra = CampaignRequest.model_fields[name], field_extra(name)
    if "default_env" in extra:
        return setting_default(extra["default_env"])
    return extra["form_default"] if info.is_required() else info.get_default(call_default_factory=True)


def _bounds(metadata: list[Any]) -> dict[str, Any]:
    """The JSON-schema keywords of a field's annotated_types metadata (Ge, Le, MinLen, MaxLen)."""
    keys = {
        annotated_types.Ge: ("ge", "minimum"),
        annotated_types.Le: ("le", "maximum"),
        annotated_types.Gt: ("gt", "exclusiveMinimum"),
        annotated_types.Lt: ("lt", "exclusiveMaximum"),
        annotated_types.MinLen: ("min_length", None),
        annotated_types.MaxLen: ("max_length", None),
    }
    out = {}
    for item in metadata:
        for kind, (attr, keyword) in keys.items():
            if isinstance(item, kind):
                out[keyword or attr] = getattr(item, attr)
    return out


def _literal_values(annotation: Any) -> list[Any] | None:
    """The values of a `Literal[...]` or `Literal[...] | None` field; None for any other type."""
    if typing.get_origin(annotation) is not typing.Literal:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1 or typing.get_origin(args[0]) is not typing.Literal:
            return None
        annotation = args[0]
    return list(typing.get_args(annotation))


@pytest.mark.airflow
def test_every_campaign_param_has_the_models_default_limits_and_description(bag) -> None:
    from accelbench.airflow.dag_defaults import CAMPAIGN_FORM_FIELDS

    params = bag.get_dag(CAMPAIGN).params
    assert list(params.keys()) == list(CAMPAIGN_FORM_FIELDS)
    for name in CAMPAIGN_FORM_FIELDS:
        param, info = params.get_param(name), CampaignRequest.model_fields[name]
        schema = param.schema
        assert param.value == _model_default(name), name
        assert info.description and info.description in (param.description or ""), name
        bounds = _bounds(info.metadata)
        kind = schema["type"] if isinstance(schema["type"], str) else schema["type"][-1]
        for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            assert schema.get(keyword) == bounds.get(keyword), (name, keyword)
        low, high = ("minItems", "maxItems") if kind == "array" else ("minLength", "maxLength")
        assert schema.get(low) == bounds.get("min_length"), name
        assert schema.get(high) == bounds.get("max_length"), name
        enum = _literal_values(info.annotation)
        if enum is not None:  # a list of Literal values (workloads): its items' enum
            assert (schema["items"] if kind == "array" else schema)["enum"] == enum, name
        for key, value in field_extra(name).items():  # uniqueItems, section, items pattern: as declared
            if key not in ("form_default", "default_env"):
                assert schema[key] == value, (name, key)
    slo_names = typing.get_args(typing.get_args(CampaignRequest.model_fields["slos"].annotation)[0])
    assert list(params.get_param("slos").schema["properties"]) == list(slo_names)
    # The form narrows the instance types to the seed file's rows, of every tier, within the model's limits.
    offered = params.get_param("instance_types").schema["items"]["allOf"][1]["enum"]
    assert {"m8g.xlarge", "g6e.xlarge", "inf2.xlarge"} <= set(offered)
    assert "enum" not in params.get_param("dtype").schema  # GPU and Neuron take the dtype as asked
    assert params.get_param("concurrency").schema["items"]["maximum"] == 1024
    assert params.get_param("repeats").value == CampaignRequest.model_fields["repeats"].default == 2


@pytest.mark.airflow
def test_the_version_campaign_and_the_weekly_matrix_take_the_same_defaults(bag) -> None:
    from accelbench.airflow.dag_defaults import campaign_defaults

    campaign = bag.get_dag(CAMPAIGN).params
    version = bag.get_dag("accelbench_cpu_version_campaign").params.get_param("execution_mode")
    assert version.schema == campaign.get_param("execution_mode").schema
    assert version.value == campaign.get_param("execution_mode").value == "local"
    with pytest.MonkeyPatch.context() as env:
        _without_settings(env)
        matrix = campaign_defaults()
    assert matrix == {name: campaign.get_param(name).value for name in matrix}
    request = CampaignRequest.model_validate(matrix)  # the weekly matrix is a valid request
    assert request.repeats == 2 and request.slos == matrix["slos"]


@pytest.mark.airflow
@pytest.mark.parametrize(
    ("field", "bad", "good"),
    [
        ("repeats", 0, 1),
        ("repeats", 21, 20),
        ("input_len", 131073, 131072),
        ("prompts_per_level", 0, 100000),
        ("quantization", "fp4", "int4"),
        ("concurrency", [0], [1024]),
        ("concurrency", [1025], [1]),
        ("concurrency", [4, 4], [4, 8]),
        ("instance_types", [], ["m8g.xlarge"]),
        ("model", "org/model; reboot", "org/model-1.5"),
        ("versions", {"cpu": "latest"}, {"cpu": "0.19.1"}),
        ("slos", {"ttft_p99_ms": 0}, {"ttft_p99_ms": 500}),
        ("slos", {"ttft_p50_ms": 100}, {}),
        ("execution_mode", "cloud", "kubernetes"),
    ],
)
def test_what_the_model_refuses_the_form_refuses(bag, field: str, bad: Any, good: Any) -> None:
    from airflow.sdk.definitions.param import ParamValidationError

    param = bag.get_dag(CAMPAIGN).params.get_param(field)
    with pytest.raises(ValidationError):
        CampaignRequest.model_validate(GOOD | {field: bad})
    with pytest.raises(ParamValidationError):
        param.resolve(bad)
    assert getattr(CampaignRequest.model_validate(GOOD | {field: good}), field) == good
    assert param.resolve(good) == good


def test_the_reference_page_holds_the_render_of_the_model() -> None:
    """docs/reference/dag-params.md lists every field of CampaignRequest (what a run's conf may set, by REST
    as by the form): the form's, in its order, then those it hides, each with why."""
    from accelbench.airflow.campaign_params import MARKER, render_dag_params
    from accelbench.airflow.dag_defaults import CAMPAIGN_FORM_FIELDS, FORM_HIDDEN_FIELDS

    page = (REPO / "docs" / "reference" / "dag-params.md").read_text()
    found = re.search(rf"<!-- generated:{MARKER} -->\n(.*?)<!-- /generated:{MARKER} -->", page, re.S)
    assert found, f"docs/reference/dag-params.md has no generated:{MARKER} block"
    assert found.group(1) == render_dag_params(), "regenerate it: scripts/gen_reference.py"
    shown, hidden = found.group(1).split("**Hidden by the form**")
    rows = {
        part: [line for line in text.splitlines() if line.startswith("| `")]
        for part, text in (("shown", shown), ("hidden", hidden))
    }
    assert [row.split("`")[1] for row in rows["shown"]] == list(CAMPAIGN_FORM_FIELDS)
    hidden_names = [row.split("`")[1] for row in rows["hidden"]]
    assert hidden_names == [n for n in CampaignRequest.model_fields if n not in CAMPAIGN_FORM_FIELDS]
    assert set(hidden_names) == set(FORM_HIDDEN_FIELDS)
    assert {"tensor_parallel_size", "kv_cache_dtype"} <= set(hidden_names)
    for row in rows["hidden"]:
        name, why = row.split("`")[1], row.rstrip(" |").rsplit(" | ", 1)[1]
        assert why == FORM_HIDDEN_FIELDS[name].replace("|", "\\|"), name
    # The campaigns guide names the same hidden fields.
    guide = " ".join((REPO / "docs" / "guides" / "campaigns.md").read_text().split())
    listed = re.search(r"may also set the fields the form hides \(([^)]*)\)", guide)
    assert listed, "docs/guides/campaigns.md no longer lists the fields the form hides"
    assert re.findall(r"`(\w+)`", listed.group(1)) == hidden_names


def test_every_field_of_the_request_is_placed_shown_or_hidden() -> None:
    """A new CampaignRequest field fails the generator (and so this test and `gen_reference.py --check`) until
    it is shown by the form or hidden with a reason; so does a field in both, or a name that is no field."""
    from accelbench.airflow.campaign_params import request_fields
    from accelbench.airflow.dag_defaults import CAMPAIGN_FORM_FIELDS, FORM_HIDDEN_FIELDS

    shown, hidden = request_fields()
    assert sorted(shown + hidden) == sorted(CampaignRequest.model_fields)
    assert all(FORM_HIDDEN_FIELDS[name] for name in hidden)  # each with why
    without = {k: v for k, v in FORM_HIDDEN_FIELDS.items() if k != "seed"}
    with pytest.raises(ValueError, match="seed: neither shown nor in FORM_HIDDEN_FIELDS"):
        request_fields(CAMPAIGN_FORM_FIELDS, without)
    with pytest.raises(ValueError, match="repeats: both shown and in FORM_HIDDEN_FIELDS"):
        request_fields(CAMPAIGN_FORM_FIELDS, FORM_HIDDEN_FIELDS | {"repeats": "x"})
    with pytest.raises(ValueError, match="colour: not a field of CampaignRequest"):
        request_fields([*CAMPAIGN_FORM_FIELDS, "colour"], FORM_HIDDEN_FIELDS)
