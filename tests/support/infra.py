"""infra/ as the tests read it: the Helm values, the Karpenter templates rendered as Terraform does, and the
device-plugin manifests.

Rendering: infra/karpenter/<tier>-<kind>.yaml.tftpl the way Terraform's templatefile() does (plain ${name}
substitution; the templates use no directives), with the variables infra/terraform/*.tf pass to that template.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import hcl2
import jsonschema
import yaml

from tests.support.paths import REPO
from tests.support.servers import missing

INFRA = REPO / "infra"
TERRAFORM = INFRA / "terraform"
HELM_VALUES = INFRA / "helm" / "airflow-values.yaml"
KARPENTER_TF = TERRAFORM / "karpenter.tf"
TIERS = ("cpu", "gpu", "neuron")
KINDS = {"NodePool": "nodepool", "EC2NodeClass": "ec2nodeclass"}
# (tier, kind) -> template. Terraform renders each in the .tf file that applies it.
TEMPLATES = {
    (tier, kind): INFRA / "karpenter" / f"{tier}-{stem}.yaml.tftpl"
    for tier in TIERS
    for kind, stem in KINDS.items()
}
# The device plugin of each accelerated tier (several objects per file), applied by Terraform with its pool.
DEVICE_PLUGINS = {
    "gpu": INFRA / "k8s" / "device-plugins" / "nvidia-device-plugin.yaml",
    "neuron": INFRA / "k8s" / "device-plugins" / "neuron-device-plugin.yaml",
}
# Values for variables that have no usable default (they name things in a real account).
TEST_VALUES = {"cluster_name": "test-cluster", "karpenter_node_role_name": "KarpenterNodeRole-test-cluster"}
# shared/ sits beside the repository clone (also in CI).
CRDS = REPO.parent / "shared" / "karpenter-crds" / "karpenter-v1.14.1"
SCHEMA_FILES = {"NodePool": "nodepool_v1.json", "EC2NodeClass": "ec2nodeclass_v1.json"}
NODEPOOL_TEMPLATE = ["properties", "spec", "properties", "template", "properties"]
REQUIREMENT_KEY = [*NODEPOOL_TEMPLATE, "spec", "properties", "requirements", "items", "properties", "key"]
TEMPLATE_LABELS = [*NODEPOOL_TEMPLATE, "metadata", "properties", "labels"]
PLAIN = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=False, with_comments=False)
INTERPOLATION = re.compile(r"\$\{([^}]*)\}")


@cache
def helm_values() -> dict[str, Any]:
    """infra/helm/airflow-values.yaml."""
    return yaml.safe_load(HELM_VALUES.read_text())


@cache
def terraform_variables() -> dict[str, Any]:
    with (TERRAFORM / "variables.tf").open() as fh:
        parsed = hcl2.load(fh, serialization_options=PLAIN)
    return {name: body for block in parsed["variable"] for name, body in block.items()}


@cache
def terraform_files() -> dict[Path, str]:
    """Every .tf file of infra/terraform and its text."""
    return {path: path.read_text() for path in sorted(TERRAFORM.glob("*.tf"))}


@cache
def template_calls() -> dict[tuple[str, str], tuple[Path, str]]:
    """(tier, kind) -> (the .tf file, the arguments of its templatefile() call); each is rendered once."""
    calls: dict[tuple[str, str], tuple[Path, str]] = {}
    for key, template in TEMPLATES.items():
        found = [
            (path, m[1])
            for path, text in terraform_files().items()
            for m in re.finditer(
                r"templatefile\(\"\$\{path\.module\}/\.\./karpenter/"
                + re.escape(template.name)
                + r"\",\s*\{(.*?)\}\)",
                text,
                re.S,
            )
        ]
        assert len(found) == 1, f"infra/terraform renders {template.name} {len(found)} times"
        calls[key] = found[0]
    return calls


def template_inputs(kind: str, tier: str = "cpu") -> dict[str, str]:
    """{template variable: terraform variable}, read from the template's templatefile() call."""
    return dict(re.findall(r"(\w+)\s*=\s*var\.(\w+)", template_calls()[tier, kind][1]))


def template_offsets(kind: str, tier: str = "cpu") -> dict[str, int]:
    """Template variables passed as `var.x + n` in the template's templatefile() call: name -> n."""
    body = template_calls()[tier, kind][1]
    return {name: int(n) for name, n in re.findall(r"(\w+)\s*=\s*var\.\w+\s*\+\s*(\d+)", body)}


def default_values(kind: str, tier: str = "cpu") -> dict[str, Any]:
    """The template's variables as Terraform would pass them with the defaults (or the test values)."""
    variables = terraform_variables()
    offsets = template_offsets(kind, tier)
    values = {}
    for name, tf_var in template_inputs(kind, tier).items():
        default = variables[tf_var].get("default")
        values[name] = TEST_VALUES.get(tf_var, default)
        if name in offsets and values[name] is not None:
            values[name] = values[name] + offsets[name]
        assert values[name] not in (None, ""), f"{tf_var} has no default: add a test value"
    return values


def render_karpenter(kind: str, tier: str = "cpu", /, **overrides: Any) -> dict[str, Any]:
    """The `tier`'s `kind` template rendered as templatefile() would, with the defaults and `overrides`."""
    template = TEMPLATES[tier, kind]
    text = template.read_text()
    assert "%{" not in text and "$${" not in text, "the test renderer supports plain ${name} only"
    values = default_values(kind, tier) | overrides

    def substitute(m: re.Match[str]) -> str:
        name = m[1]
        assert name in values, f"{template.name}: ${{{name}}} is not passed by infra/terraform"
        value = values[name]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return str(value)

    manifest = yaml.safe_load(INTERPOLATION.sub(substitute, text))
    assert manifest["kind"] == kind
    return manifest


@cache
def device_plugin_objects(tier: str) -> tuple[dict[str, Any], ...]:
    """The objects of the tier's device-plugin file, in order."""
    return tuple(doc for doc in yaml.safe_load_all(DEVICE_PLUGINS[tier].read_text()) if doc)


# ---- the Karpenter CRD schemas (shared/karpenter-crds) ----------------------------------------


@cache
def crd_schema(kind: str, strict: bool) -> dict[str, Any]:
    """The kind's openAPIV3Schema from the v1.14.1 CRD; strict: unknown fields fail."""
    folder = CRDS / ("jsonschema-strict" if strict else "jsonschema")
    if not folder.is_dir():
        missing(f"the Karpenter CRD schemas at {folder} (shared/ beside the repository)")
    return json.loads((folder / SCHEMA_FILES[kind]).read_text())


def validate_crd(kind: str, manifest: dict[str, Any]) -> None:
    """Fails (AssertionError, naming each field) unless `manifest` passes the strict schema."""
    schema = crd_schema(kind, strict=True)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    errors = sorted(cls(schema).iter_errors(manifest), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def crd_rules(kind: str, path: list[str]) -> list[str]:
    """The CEL rules on a schema node, from the non-strict schema (the CRD as shipped)."""
    node = crd_schema(kind, strict=False)
    for key in path:
        node = node[key]
    return [v["rule"] for v in node.get("x-kubernetes-validations", [])]


def allowed_restricted_keys(kind: str, path: list[str], domain: str) -> set[str]:
    """The well-known keys a CEL rule allows in a restricted label domain (read from the CRD itself)."""
    for rule in crd_rules(kind, path):
        if f'endsWith("{domain}")' in rule:
            listed = re.match(r"self(?:\.all\(x, x)? in \[(.*?)\]", rule)
            assert listed, rule
            return set(json.loads(f"[{listed[1]}]"))
    raise AssertionError(f"no rule for {domain} at {path}")


def in_domain(key: str, domain: str) -> bool:
    return "/" in key and key.split("/", 1)[0].endswith(domain)
