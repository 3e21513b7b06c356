"""infra/ as the tests read it: the Helm values, and the Karpenter templates rendered as Terraform does.

Rendering: infra/karpenter/*.yaml.tftpl the way Terraform's templatefile() does (plain ${name} substitution;
the templates use no directives), with the variables infra/terraform/karpenter.tf passes.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import hcl2
import yaml

from tests.support.paths import REPO

INFRA = REPO / "infra"
HELM_VALUES = INFRA / "helm" / "airflow-values.yaml"
KARPENTER_TF = INFRA / "terraform" / "karpenter.tf"
TEMPLATES = {
    "NodePool": INFRA / "karpenter" / "cpu-nodepool.yaml.tftpl",
    "EC2NodeClass": INFRA / "karpenter" / "cpu-ec2nodeclass.yaml.tftpl",
}
# Values for variables that have no usable default (they name things in a real account).
TEST_VALUES = {"cluster_name": "test-cluster", "karpenter_node_role_name": "KarpenterNodeRole-test-cluster"}
PLAIN = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=False, with_comments=False)
INTERPOLATION = re.compile(r"\$\{([^}]*)\}")


@cache
def helm_values() -> dict[str, Any]:
    """infra/helm/airflow-values.yaml."""
    return yaml.safe_load(HELM_VALUES.read_text())


@cache
def terraform_variables() -> dict[str, Any]:
    with (INFRA / "terraform" / "variables.tf").open() as fh:
        parsed = hcl2.load(fh, serialization_options=PLAIN)
    return {name: body for block in parsed["variable"] for name, body in block.items()}


@cache
def template_inputs() -> dict[str, dict[str, str]]:
    """kind -> {template variable: terraform variable}, read from the templatefile() calls in karpenter.tf."""
    text = KARPENTER_TF.read_text()
    inputs: dict[str, dict[str, str]] = {}
    for kind, path in TEMPLATES.items():
        m = re.search(
            r"templatefile\(\"\$\{path\.module\}/\.\./karpenter/"
            + re.escape(path.name)
            + r"\",\s*\{(.*?)\}\)",
            text,
            re.S,
        )
        assert m, f"karpenter.tf does not render {path.name}"
        inputs[kind] = dict(re.findall(r"(\w+)\s*=\s*var\.(\w+)", m[1]))
    return inputs


@cache
def template_offsets() -> dict[str, int]:
    """Template variables passed as `var.x + n` in karpenter.tf: name -> n."""
    text = KARPENTER_TF.read_text()
    return {name: int(n) for name, n in re.findall(r"(\w+)\s*=\s*var\.\w+\s*\+\s*(\d+)", text)}


def default_values(kind: str) -> dict[str, Any]:
    """The template's variables as Terraform would pass them with the defaults (or the test values)."""
    variables = terraform_variables()
    values = {}
    for name, tf_var in template_inputs()[kind].items():
        default = variables[tf_var].get("default")
        values[name] = TEST_VALUES.get(tf_var, default)
        if name in template_offsets() and values[name] is not None:
            values[name] = values[name] + template_offsets()[name]
        assert values[name] not in (None, ""), f"{tf_var} has no default: add a test value"
    return values


def render_karpenter(kind: str, **overrides: Any) -> dict[str, Any]:
    """The `kind` template rendered as templatefile() would, with the defaults and `overrides`."""
    text = TEMPLATES[kind].read_text()
    assert "%{" not in text and "$${" not in text, "the test renderer supports plain ${name} only"
    values = default_values(kind) | overrides

    def substitute(m: re.Match[str]) -> str:
        name = m[1]
        assert name in values, f"{TEMPLATES[kind].name}: ${{{name}}} is not passed by karpenter.tf"
        value = values[name]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return str(value)

    manifest = yaml.safe_load(INTERPOLATION.sub(substitute, text))
    assert manifest["kind"] == kind
    return manifest
