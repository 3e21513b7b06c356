"""Infrastructure files stay as narrow as the docs say (docs/guides/deploy-on-eks.md, infra/README.md)."""

from __future__ import annotations

import json
import re

from tests.support.paths import REPO

READ_ONLY = {"pricing:GetProducts", "ec2:DescribeInstanceTypes", "ec2:DescribeSpotPriceHistory"}


def test_catalog_policy_grants_only_the_read_only_calls_the_dags_make() -> None:
    policy = json.loads((REPO / "infra" / "iam" / "catalog-refresh-policy.json").read_text())
    actions = set()
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow"
        listed = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert not any("*" in a for a in listed), listed
        actions.update(listed)
    assert actions == READ_ONLY


def test_airflow_image_installs_the_package_with_the_pinned_constraints() -> None:
    text = (REPO / "docker" / "airflow" / "Dockerfile").read_text()
    assert "FROM apache/airflow:3.3.2-python3.11" in text
    assert "/opt/accelbench/docker/airflow/install.sh python /opt/accelbench" in text
    constraints = (REPO / "constraints.txt").read_text()
    assert "apache-airflow==3.3.2" in constraints
    s3fs = next(line for line in constraints.splitlines() if line.startswith("s3fs=="))
    assert int(s3fs.split("==")[1].split(".")[0]) >= 2025


# ---- the deployment guide (docs/guides/deploy-on-eks.md) matches the files it drives ---------------


def _guide() -> str:
    return (REPO / "docs" / "guides" / "deploy-on-eks.md").read_text()


def test_deployment_guide_names_only_what_the_infra_defines() -> None:
    import hcl2

    guide = _guide()
    with (REPO / "infra" / "terraform" / "variables.tf").open() as fh:
        variables = {name.strip('"') for block in hcl2.load(fh)["variable"] for name in block}
    with (REPO / "infra" / "terraform" / "outputs.tf").open() as fh:
        outputs = {name.strip('"') for block in hcl2.load(fh)["output"] for name in block}
    used_vars = set(re.findall(r"-var (\w+)=", guide))
    assert used_vars and used_vars <= variables, used_vars - variables
    used_outputs = set(re.findall(r"terraform output -raw (\w+)", guide))
    assert used_outputs == {"lake_uri", "benchmark_pool_slots"} and used_outputs <= outputs
    table = set(re.findall(r"^\| `(\w+)`", guide, re.M))
    missing = {v for v in variables if f"`{v}`" not in guide}
    # Every variable is in the table, except the service-account/namespace names grouped on one row.
    assert missing <= {
        "airflow_worker_service_account",
        "airflow_api_server_service_account",
        "benchmark_service_account",
        "tags",
        "lake_noncurrent_version_days",
    }, missing
    assert table <= variables
    values = (REPO / "infra" / "helm" / "airflow-values.yaml").read_text()
    for placeholder in re.findall(
        r"s\|(REPLACE_WITH_\w+|s3://REPLACE_WITH_\w+|accelbench-loadgen:[\d.]+)\|", guide
    ):
        assert placeholder in values, placeholder
    for path in re.findall(r"-f (docker/\w+/Dockerfile)", guide):
        assert (REPO / path).is_file(), path
    assert "ACCELBENCH_BENCHMARK_POOL_SLOTS" in guide and "accelbench-model-store" in values
    for secret in re.findall(r"--from-literal=(\w+)=", guide):
        assert f"secretKey: {secret}" in values or secret in {"token", "connection"}, secret
