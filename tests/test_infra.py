"""Infrastructure files stay as narrow as the README says."""

from __future__ import annotations

import json

from tests.conftest import REPO

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
