"""infra/terraform: parses, gates the Karpenter manifests and device plugins, and grants no more than the DAGs
and pods need.

python-hcl2 parses the HCL offline (no terraform binary). Policies are read from the parsed
``data "aws_iam_policy_document"`` blocks and from the JSON files the stack loads with ``file()``; a policy
written any other way (an inline ``jsonencode``) fails the test, so nothing escapes the checks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import hcl2
import pytest
import yaml
from accelbench.k8s import placement
from accelbench.lake.schemas import AREAS, TABLES

from tests.support.infra import DEVICE_PLUGINS, TIERS
from tests.support.paths import REPO

INFRA = REPO / "infra"
TERRAFORM = INFRA / "terraform"
TF_FILES = sorted(INFRA.rglob("*.tf"))
# The read-only calls of the catalog and pricing DAGs; AWS does not scope them to resources.
READ_ONLY = {"pricing:GetProducts", "ec2:DescribeInstanceTypes", "ec2:DescribeSpotPriceHistory"}
LAKE_ARN = "${aws_s3_bucket.lake.arn}"
# Every prefix the lake writes, as the library names them: its tables and its other areas.
LAKE_PREFIXES = {f"{name}/" for name in (*TABLES, *AREAS)}
# Each tier's gate: every Kubernetes object of the tier (NodePool, EC2NodeClass, device plugin) is behind it.
GATES = {tier: f"install_{tier}_nodepool" for tier in TIERS}
COUNT_GATE = re.compile(r"\$\{var\.(\w+) \? 1 : 0\}")
# for_each over a local map, filtered by the gate inside the for expression.
FOR_EACH_GATE = re.compile(r"\$\{\{for (\w+), (\w+) in local\.(\w+) : \1 => \2 if var\.(\w+)\}\}")
MANIFEST_TYPES = {"kubernetes_manifest", "kubectl_manifest"}
PLAIN = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=False, with_comments=False)


@cache
def stack() -> dict[str, list[Any]]:
    """Every top-level block of infra/terraform, merged over its files (strings without their quotes)."""
    merged: dict[str, list[Any]] = {}
    for path in sorted(TERRAFORM.glob("*.tf")):
        with path.open() as fh:
            for kind, blocks in hcl2.load(fh, serialization_options=PLAIN).items():
                merged.setdefault(kind, []).extend(blocks)
    return merged


def blocks(kind: str, type_: str | None = None) -> dict[str, Any]:
    """'resource', 'aws_iam_role' -> {name: body}; 'variable' -> {name: body}."""
    found: dict[str, Any] = {}
    for block in stack().get(kind, []):
        for key, body in block.items():
            if type_ is None:
                found[key] = body
            elif key == type_:
                found.update(body)
    return found


def resources(type_: str) -> dict[str, Any]:
    return blocks("resource", type_)


def locals_() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for block in stack().get("locals", []):
        merged.update(block)
    return merged


def resolve(value: str) -> str:
    """Replace ${local.x} by the local's value where that value is itself one interpolation."""
    for name, local in locals_().items():
        if isinstance(local, str) and re.fullmatch(r"\$\{[^${}]+\}", local):
            value = value.replace("${local." + name + "}", local)
    return value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def one(value: Any) -> Any:
    """A nested block that may appear once (python-hcl2 gives every nested block as a list)."""
    items = as_list(value)
    assert len(items) == 1, items
    return items[0]


@dataclass
class Statement:
    effect: str
    actions: set[str]
    resources: set[str]
    conditions: list[dict[str, Any]] = field(default_factory=list)
    principals: list[dict[str, Any]] = field(default_factory=list)


def document_statements(name: str) -> list[Statement]:
    doc = blocks("data", "aws_iam_policy_document")[name]
    assert set(doc) <= {"statement"}, f"{name}: only plain statements are checked, found {sorted(doc)}"
    return [
        Statement(
            effect=st.get("effect", "Allow"),
            actions=set(st.get("actions", [])),
            resources={resolve(r) for r in st.get("resources", [])},
            conditions=as_list(st.get("condition", [])),
            principals=as_list(st.get("principals", [])),
        )
        for st in as_list(doc["statement"])
    ]


def json_statements(path: Path) -> list[Statement]:
    policy = json.loads(path.read_text())
    return [
        Statement(
            effect=st["Effect"],
            actions=set(as_list(st["Action"])),
            resources=set(as_list(st["Resource"])),
            conditions=[st["Condition"]] if "Condition" in st else [],
        )
        for st in policy["Statement"]
    ]


def policy_statements(expression: str) -> list[Statement]:
    """The statements behind a `policy` / `assume_role_policy` argument."""
    if m := re.fullmatch(r"\$\{data\.aws_iam_policy_document\.(\w+)\.json\}", expression):
        return document_statements(m[1])
    if m := re.fullmatch(r'\$\{file\("\$\{path\.module\}/([^"]+)"\)\}', expression):
        return json_statements((TERRAFORM / m[1]).resolve())
    raise AssertionError(f"policy written in a form the tests cannot check: {expression}")


def every_policy() -> dict[str, list[Statement]]:
    found: dict[str, list[Statement]] = {}
    for type_, attr in (
        ("aws_iam_policy", "policy"),
        ("aws_iam_role_policy", "policy"),
        ("aws_s3_bucket_policy", "policy"),
        ("aws_iam_role", "assume_role_policy"),
    ):
        for name, body in resources(type_).items():
            found[f"{type_}.{name}"] = policy_statements(body[attr])
    return found


def role_permissions(role: str) -> list[Statement]:
    """Identity policies of aws_iam_role.<role>: inline role policies plus attached managed policies."""
    ref = "${aws_iam_role." + role + "."
    statements: list[Statement] = []
    for body in resources("aws_iam_role_policy").values():
        if body["role"].startswith(ref):
            statements += policy_statements(body["policy"])
    for body in resources("aws_iam_role_policy_attachment").values():
        if body["role"].startswith(ref):
            m = re.fullmatch(r"\$\{aws_iam_policy\.(\w+)\.arn\}", body["policy_arn"])
            assert m, f"{role}: attached policy outside this stack: {body['policy_arn']}"
            statements += policy_statements(resources("aws_iam_policy")[m[1]]["policy"])
    assert not resources("aws_iam_role")[role].get("managed_policy_arns"), role
    return statements


def allowed(statements: list[Statement]) -> list[Statement]:
    return [st for st in statements if st.effect == "Allow"]


# ---- parsing and the gate --------------------------------------------------------------------


def test_there_is_terraform_to_check() -> None:
    assert {p.name for p in TF_FILES} >= {"variables.tf", "karpenter.tf", "iam.tf", "lake.tf"}


@pytest.mark.parametrize("path", TF_FILES, ids=lambda p: str(p.relative_to(INFRA)))
def test_every_tf_file_parses(path: Path) -> None:
    with path.open() as fh:
        parsed = hcl2.load(fh)
    assert parsed, path


@pytest.mark.parametrize("tier", TIERS)
def test_every_nodepool_gate_is_an_off_by_default_bool(tier: str) -> None:
    gate = blocks("variable")[GATES[tier]]
    assert gate["type"] == "bool"
    assert gate["default"] is False


def gated_tier(address: str, body: dict[str, Any]) -> tuple[str, str]:
    """(the gate variable, the tier of the objects applied) of one manifest resource."""
    if "count" in body:
        gate = COUNT_GATE.fullmatch(body["count"])
        assert gate, (address, body["count"])
        applied = re.fullmatch(r"\$\{local\.(\w+)\}", body["manifest"])
        assert applied, (address, body["manifest"])
        return gate[1], applied[1].split("_", 1)[0]
    gate = FOR_EACH_GATE.fullmatch(body.get("for_each", ""))
    assert gate, (address, "neither count nor a gated for_each")
    assert body["manifest"] == "${each.value}", address
    decoded = locals_()[gate[3]]
    tiers = [t for t, path in DEVICE_PLUGINS.items() if f"/../{path.relative_to(INFRA)}" in decoded]
    assert len(tiers) == 1, (address, decoded)
    return gate[4], tiers[0]


def test_every_kubernetes_manifest_is_behind_its_tiers_gate() -> None:
    manifests = {
        f"{type_}.{name}": body for type_ in MANIFEST_TYPES for name, body in resources(type_).items()
    }
    per_tier: dict[str, int] = {}
    for address, body in manifests.items():
        gate, tier = gated_tier(address, body)
        assert tier in GATES and gate == GATES[tier], (address, gate, tier)
        per_tier[tier] = per_tier.get(tier, 0) + 1
    # Each tier: its NodePool and EC2NodeClass, plus the device plugin of the accelerated tiers.
    assert per_tier == {tier: 2 + (tier in DEVICE_PLUGINS) for tier in TIERS}, per_tier
    # Nothing else in the stack talks to the Kubernetes API (kubernetes_* resources need a live cluster).
    kube = [
        t for block in stack().get("resource", []) for t in block if t.startswith(("kubernetes", "kubectl"))
    ]
    assert set(kube) <= MANIFEST_TYPES, kube


def test_the_gate_check_would_catch_an_ungated_device_plugin() -> None:
    real = resources("kubernetes_manifest")["nvidia_device_plugin"]
    with pytest.raises(AssertionError):
        gated_tier("ungated", real | {"for_each": "${local.nvidia_device_plugin}"})
    # Gated by the other tier's switch: the NVIDIA plugin would follow the Neuron pool.
    wrong = real["for_each"].replace("install_gpu_nodepool", "install_neuron_nodepool")
    assert wrong != real["for_each"]
    gate, tier = gated_tier("wrong-gate", real | {"for_each": wrong})
    assert tier == "gpu" and gate != GATES[tier]


def test_karpenter_manifests_come_from_the_yaml_templates_the_tests_render() -> None:
    text = "\n".join(path.read_text() for path in sorted(TERRAFORM.glob("*.tf")))
    used = re.findall(r'templatefile\("\$\{path\.module\}/\.\./(karpenter/[^"]+)"', text)
    assert sorted(used) == sorted(f"karpenter/{p.name}" for p in (INFRA / "karpenter").glob("*.tftpl"))
    assert len(used) == 2 * len(TIERS)
    for rel in used:
        assert (INFRA / rel).is_file(), rel
        assert f'yamldecode(templatefile("${{path.module}}/../{rel}"' in text, rel
    # Only karpenter.tf and accelerated.tf talk to Kubernetes; the CPU tier is karpenter.tf's.
    assert "cpu-nodepool.yaml.tftpl" in (TERRAFORM / "karpenter.tf").read_text()


def test_device_plugins_are_decoded_from_the_files_the_tests_validate() -> None:
    """manifest_decode_multi over each plugin file, keyed by kind/name: keys must be unique in the file."""
    for tier, path in DEVICE_PLUGINS.items():
        rel = path.relative_to(INFRA)
        decoders = [
            v
            for v in locals_().values()
            if isinstance(v, str) and f'manifest_decode_multi(file("${{path.module}}/../{rel}"))' in v
        ]
        assert len(decoders) == 1, (tier, decoders)
        assert decoders[0].endswith(': "${m.kind}/${m.metadata.name}" => m}}'), decoders[0]
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        keys = [f"{d['kind']}/{d['metadata']['name']}" for d in docs]
        assert len(keys) == len(set(keys)) >= 1, keys
    # Provider-defined functions: Terraform >= 1.8 and hashicorp/kubernetes >= 2.28 (its CHANGELOG, v2.28.0).
    versions = (TERRAFORM / "versions.tf").read_text()
    (core,) = re.findall(r'required_version = ">= 1\.(\d+)"', versions)
    (provider,) = re.findall(r'source\s*=\s*"hashicorp/kubernetes"\s*version\s*=\s*">= 2\.(\d+)', versions)
    assert int(core) >= 8 and int(provider) >= 28


# ---- IAM -------------------------------------------------------------------------------------


def test_every_policy_is_checkable_and_none_is_inline_json() -> None:
    policies = every_policy()
    assert {"aws_iam_role.airflow_worker", "aws_iam_role.benchmark_pod"} <= set(policies)
    for path in TERRAFORM.glob("*.tf"):
        assert "jsonencode(" not in path.read_text(), (
            f"{path.name}: write policies as aws_iam_policy_document"
        )


def test_no_allow_statement_uses_a_wildcard_action() -> None:
    for address, statements in every_policy().items():
        for st in statements:
            wild = {a for a in st.actions if "*" in a}
            if st.effect == "Allow":
                assert not wild, (address, wild)
            else:
                # A Deny takes rights away; the only one is the bucket's refusal of plain HTTP.
                assert st.conditions and all(
                    c["variable"] == "aws:SecureTransport" and c["values"] == ["false"] for c in st.conditions
                ), (address, st)


def test_resource_star_only_for_the_three_read_only_calls() -> None:
    for address, statements in every_policy().items():
        if address.startswith("aws_iam_role."):
            continue  # trust policies name principals, not resources
        for st in allowed(statements):
            if "*" in st.resources:
                assert st.resources == {"*"}, (address, st)
                assert st.actions <= READ_ONLY, (address, st.actions)


def test_s3_permissions_are_scoped_to_the_lake_bucket_and_its_prefixes() -> None:
    object_arns = {f"{LAKE_ARN}/{prefix}*" for prefix in LAKE_PREFIXES}
    for address, statements in every_policy().items():
        for st in allowed(statements):
            s3 = {a for a in st.actions if a.startswith("s3:")}
            if not s3:
                continue
            assert s3 == st.actions, (address, "keep S3 statements apart from others")
            if s3 == {"s3:ListBucket"}:
                assert st.resources == {LAKE_ARN}, (address, st.resources)
                (cond,) = st.conditions
                assert cond["variable"] == "s3:prefix" and cond["test"] == "StringLike", cond
                assert set(cond["values"]) <= {f"{p}*" for p in LAKE_PREFIXES}, cond
            else:
                assert "s3:ListBucket" not in s3, address
                assert st.resources and st.resources <= object_arns, (address, st.resources)


def test_airflow_workers_get_the_read_only_calls_and_the_lake_only() -> None:
    statements = allowed(role_permissions("airflow_worker"))
    actions = set().union(*(st.actions for st in statements))
    assert actions == READ_ONLY | {
        "s3:ListBucket",
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
    }
    # raw/ is the benchmark pods' output: the workers read it and never change it.
    for st in statements:
        if st.actions & {"s3:PutObject", "s3:DeleteObject"}:
            assert f"{LAKE_ARN}/raw/*" not in st.resources, st
    reads = {r for st in statements if "s3:GetObject" in st.actions for r in st.resources}
    assert reads == {f"{LAKE_ARN}/{prefix}*" for prefix in LAKE_PREFIXES}


def test_the_worker_policy_file_is_the_catalog_policy_the_dags_already_use() -> None:
    policy = resources("aws_iam_policy")["catalog_refresh"]["policy"]
    assert policy == '${file("${path.module}/../iam/catalog-refresh-policy.json")}'


def test_benchmark_pods_can_only_write_under_raw_and_read_the_traces_they_replay() -> None:
    """...and list and read the weights they stream (models/, ACCELBENCH_WEIGHTS_URI), nothing else."""
    statements = role_permissions("benchmark_pod")
    assert all(st.effect == "Allow" for st in statements)
    writes = [st for st in statements if st.actions & {"s3:PutObject", "s3:AbortMultipartUpload"}]
    assert set().union(*(st.actions for st in writes)) == {"s3:PutObject", "s3:AbortMultipartUpload"}
    assert set().union(*(st.resources for st in writes)) == {f"{LAKE_ARN}/raw/*"}
    reads = [st for st in statements if st.actions == {"s3:GetObject"}]
    assert set().union(*(st.resources for st in reads)) == {f"{LAKE_ARN}/traces/*", f"{LAKE_ARN}/models/*"}
    (listing,) = (st for st in statements if st not in writes and st not in reads)
    assert listing.actions == {"s3:ListBucket"} and listing.resources == {LAKE_ARN}
    assert listing.conditions[0]["values"] == ["models/*"]


def test_the_api_server_can_only_list_and_read_reports() -> None:
    statements = role_permissions("airflow_api_server")
    assert all(st.effect == "Allow" for st in statements)
    assert set().union(*(st.actions for st in statements)) == {"s3:ListBucket", "s3:GetObject"}
    (listing,) = (st for st in statements if st.actions == {"s3:ListBucket"})
    assert listing.conditions[0]["values"] == ["reports/*"]
    (reads,) = (st for st in statements if st.actions == {"s3:GetObject"})
    assert reads.resources == {f"{LAKE_ARN}/reports/*"}


def test_every_role_is_assumable_only_through_eks_pod_identity_of_this_cluster() -> None:
    assert set(resources("aws_iam_role")) == {"airflow_worker", "benchmark_pod", "airflow_api_server"}
    for role in resources("aws_iam_role"):
        (st,) = policy_statements(resources("aws_iam_role")[role]["assume_role_policy"])
        assert st.effect == "Allow"
        assert st.actions == {"sts:AssumeRole", "sts:TagSession"}
        assert st.principals == [{"type": "Service", "identifiers": ["pods.eks.amazonaws.com"]}]
        assert {c["variable"] for c in st.conditions} == {"aws:SourceAccount", "aws:SourceArn"}


def test_pod_identity_associations_bind_the_service_accounts_the_manifests_define() -> None:
    variables = blocks("variable")
    assoc = resources("aws_eks_pod_identity_association")
    assert assoc["benchmark_pod"]["namespace"] == "${var.benchmark_namespace}"
    assert assoc["benchmark_pod"]["service_account"] == "${var.benchmark_service_account}"
    assert assoc["benchmark_pod"]["role_arn"] == "${aws_iam_role.benchmark_pod.arn}"
    assert assoc["airflow_worker"]["namespace"] == "${var.airflow_namespace}"
    assert assoc["airflow_worker"]["service_account"] == "${var.airflow_worker_service_account}"
    assert assoc["airflow_worker"]["role_arn"] == "${aws_iam_role.airflow_worker.arn}"
    assert assoc["airflow_api_server"]["service_account"] == "${var.airflow_api_server_service_account}"
    assert assoc["airflow_api_server"]["role_arn"] == "${aws_iam_role.airflow_api_server.arn}"

    assert variables["benchmark_namespace"]["default"] == placement.BENCHMARK_NAMESPACE
    sa = yaml.safe_load((INFRA / "k8s" / "benchmark-serviceaccount.yaml").read_text())
    assert variables["benchmark_service_account"]["default"] == sa["metadata"]["name"]
    values = yaml.safe_load((INFRA / "helm" / "airflow-values.yaml").read_text())
    assert (
        variables["airflow_worker_service_account"]["default"] == values["workers"]["serviceAccount"]["name"]
    )
    assert variables["airflow_namespace"]["default"] == values["config"]["kubernetes_executor"]["namespace"]
    assert (
        variables["airflow_api_server_service_account"]["default"]
        == values["apiServer"]["serviceAccount"]["name"]
    )


# ---- the lake bucket -------------------------------------------------------------------------


def lake_setting(type_: str) -> dict[str, Any]:
    (body,) = resources(type_).values()
    assert body["bucket"] == "${aws_s3_bucket.lake.id}", type_
    return body


def test_lake_bucket_is_versioned() -> None:
    versioning = lake_setting("aws_s3_bucket_versioning")
    assert one(versioning["versioning_configuration"])["status"] == "Enabled"


def test_lake_bucket_is_encrypted_at_rest() -> None:
    sse = lake_setting("aws_s3_bucket_server_side_encryption_configuration")
    algorithm = one(one(sse["rule"])["apply_server_side_encryption_by_default"])["sse_algorithm"]
    assert algorithm in {"aws:kms", "AES256"}


def test_lake_bucket_blocks_every_kind_of_public_access() -> None:
    block = lake_setting("aws_s3_bucket_public_access_block")
    for flag in ("block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"):
        assert block[flag] is True, flag


def test_lake_bucket_owner_owns_every_object() -> None:
    ownership = lake_setting("aws_s3_bucket_ownership_controls")
    assert one(ownership["rule"])["object_ownership"] == "BucketOwnerEnforced"


def test_lake_bucket_refuses_plain_http() -> None:
    (st,) = policy_statements(lake_setting("aws_s3_bucket_policy")["policy"])
    assert st.effect == "Deny"
    assert st.resources == {LAKE_ARN, f"{LAKE_ARN}/*"}
