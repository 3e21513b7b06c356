"""Catalog rows checked against EC2 DescribeInstanceTypes served by a moto server on 127.0.0.1."""

from __future__ import annotations

import logging
from dataclasses import replace

import boto3
from accelbench.aws.clients import make_client
from accelbench.aws.ec2 import describe_instance_types
from accelbench.catalog.seed_file import load_seed
from accelbench.catalog.verify import verify

SPECS = load_seed()


def _ec2(moto):
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    return make_client(session, "ec2", "us-east-1", 3, endpoint_url=moto.endpoint)


def test_every_seed_row_matches_ec2(moto_server) -> None:
    facts, unknown = describe_instance_types(_ec2(moto_server), [s.instance_type for s in SPECS])
    report = verify(SPECS, facts, unknown)
    assert unknown == []
    assert report.checked == len(SPECS)
    assert report.mismatches == []


def test_mismatches_and_unknown_types_are_reported_not_fixed(moto_server, caplog) -> None:
    wrong = [replace(s, vcpu=3) if s.instance_type == "r8g.large" else s for s in SPECS]
    wrong = [replace(s, architecture="x86_64") if s.instance_type == "c7g.medium" else s for s in wrong]
    names = [s.instance_type for s in wrong] + ["r8g.enormous"]
    with caplog.at_level(logging.WARNING):
        facts, unknown = describe_instance_types(_ec2(moto_server), names)
        report = verify(wrong, facts, unknown)
    assert unknown == ["r8g.enormous"]
    assert sorted(str(m) for m in report.mismatches) == [
        "c7g.medium: architecture catalog='x86_64' ec2=['arm64']",
        "r8g.large: vcpu catalog=3 ec2=2",
    ]
    assert "r8g.large: vcpu catalog=3 ec2=2" in caplog.text
    assert "r8g.enormous: EC2 does not offer" in caplog.text
