"""Catalog rows checked against EC2 DescribeInstanceTypes: a moto server on 127.0.0.1, and Stubber."""

from __future__ import annotations

import logging
from dataclasses import replace

import boto3
from accelbench.aws.clients import make_client
from accelbench.aws.ec2 import describe_instance_types
from accelbench.catalog.verify import verify
from accelbench.tiers import NEURON, cores_per_device, load_seed
from botocore.stub import Stubber

SPECS = load_seed()


def _ec2(moto):
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    return make_client(session, "ec2", "us-east-1", 3, endpoint_url=moto.endpoint)


def test_every_seed_row_matches_ec2(moto_server) -> None:
    facts, unknown = describe_instance_types(_ec2(moto_server), [s.instance_type for s in SPECS])
    report = verify(SPECS, facts, unknown, cores_per_device)
    assert unknown == []
    assert report.checked == len(SPECS)
    assert report.mismatches == []


def test_mismatches_and_unknown_types_are_reported_not_fixed(moto_server, caplog) -> None:
    wrong = [replace(s, vcpu=3) if s.instance_type == "r8g.large" else s for s in SPECS]
    wrong = [replace(s, architecture="x86_64") if s.instance_type == "c7g.medium" else s for s in wrong]
    names = [s.instance_type for s in wrong] + ["r8g.enormous"]
    with caplog.at_level(logging.WARNING):
        facts, unknown = describe_instance_types(_ec2(moto_server), names)
        report = verify(wrong, facts, unknown, cores_per_device)
    assert unknown == ["r8g.enormous"]
    assert sorted(str(m) for m in report.mismatches) == [
        "c7g.medium: architecture catalog='x86_64' ec2=['arm64']",
        "r8g.large: vcpu catalog=3 ec2=2",
    ]
    assert "r8g.large: vcpu catalog=3 ec2=2" in caplog.text
    assert "r8g.enormous: EC2 does not offer" in caplog.text


def test_ec2_reports_the_neuron_cores_per_device_the_planner_assumes(moto_server) -> None:
    """moto serves DescribeInstanceTypes from EC2 answers it recorded, in botocore's wire shapes."""
    neuron = [s for s in SPECS if s.accelerator_type == "neuron"]
    facts, _ = describe_instance_types(_ec2(moto_server), [s.instance_type for s in neuron])
    assert {s.family for s in neuron} == set(NEURON.cores_by_family)
    for spec in neuron:
        assert facts[spec.instance_type].neuron_cores_per_device == NEURON.cores_by_family[spec.family]
    gpu = [s.instance_type for s in SPECS if s.accelerator_type == "gpu"][:1]
    cpu = [s.instance_type for s in SPECS if s.accelerator_type == "cpu"][:1]
    others, _ = describe_instance_types(_ec2(moto_server), gpu + cpu)
    assert {f.neuron_cores_per_device for f in others.values()} == {None}
    assert others[cpu[0]].accelerator_name is None and others[cpu[0]].accelerator_count == 0


# DescribeInstanceTypes items as EC2 returns them (values recorded from EC2 by moto), cut to the fields
# read here plus a few neighbours; Stubber refuses any member or type botocore's model does not define.
TRN1_32XL = {
    "InstanceType": "trn1.32xlarge",
    "VCpuInfo": {"DefaultVCpus": 128, "DefaultCores": 64, "DefaultThreadsPerCore": 2},
    "MemoryInfo": {"SizeInMiB": 524288},
    "ProcessorInfo": {
        "SupportedArchitectures": ["x86_64"],
        "Manufacturer": "Intel",
        "SustainedClockSpeedInGhz": 3.5,
    },
    "NetworkInfo": {
        "DefaultNetworkCardIndex": 0,
        "Ipv4AddressesPerInterface": 50,
        "MaximumNetworkCards": 8,
        "MaximumNetworkInterfaces": 40,
        "NetworkCards": [
            {"NetworkCardIndex": i, "MaximumNetworkInterfaces": 5, "NetworkPerformance": "100 Gigabit"}
            for i in range(8)
        ],
    },
    "NeuronInfo": {
        "NeuronDevices": [
            {
                "Count": 16,
                "Name": "Trainium",
                "CoreInfo": {"Count": 2, "Version": 2},
                "MemoryInfo": {"SizeInMiB": 32768},
            }
        ],
        "TotalNeuronDeviceMemoryInMiB": 524288,
    },
}
G6_XL = {
    "InstanceType": "g6.xlarge",
    "VCpuInfo": {"DefaultVCpus": 4, "DefaultCores": 2, "DefaultThreadsPerCore": 2},
    "MemoryInfo": {"SizeInMiB": 16384},
    "ProcessorInfo": {"SupportedArchitectures": ["x86_64"], "Manufacturer": "AMD"},
    "NetworkInfo": {
        "DefaultNetworkCardIndex": 0,
        "Ipv4AddressesPerInterface": 15,
        "MaximumNetworkInterfaces": 4,
        "NetworkCards": [{"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 4}],
    },
    "GpuInfo": {
        "Gpus": [
            {
                "Count": 1,
                "GpuPartitionSize": 1.0,
                "LogicalGpuCount": 1,
                "Manufacturer": "NVIDIA",
                "MemoryInfo": {"SizeInMiB": 22888},
                "Name": "L4",
                "Workloads": ["graphics", "ml-ai"],
            }
        ],
        "TotalGpuMemoryInMiB": 22888,
    },
}


def _stubbed_facts(items: list[dict]) -> dict:
    client = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="y").client(
        "ec2", region_name="us-east-1"
    )
    names = [i["InstanceType"] for i in items]
    with Stubber(client) as stub:
        stub.add_response("describe_instance_types", {"InstanceTypes": items}, {"InstanceTypes": names})
        facts, unknown = describe_instance_types(client, names)
        stub.assert_no_pending_responses()
    assert unknown == []
    return facts


def test_gpu_and_neuron_documents_are_read_per_device_and_match_the_catalog() -> None:
    facts = _stubbed_facts([TRN1_32XL, G6_XL])
    trn1, g6 = facts["trn1.32xlarge"], facts["g6.xlarge"]
    assert (trn1.accelerator_name, trn1.accelerator_count, trn1.accelerator_memory_gib) == (
        "AWS Trainium",
        16,
        32,
    )
    assert trn1.neuron_cores_per_device == 2 and trn1.max_pods == 5 * 49 + 2
    assert (g6.accelerator_name, g6.accelerator_count, g6.accelerator_memory_gib) == (
        "NVIDIA L4",
        1,
        22888 / 1024,
    )
    assert g6.neuron_cores_per_device is None
    report = verify(SPECS, facts, [], cores_per_device)
    assert report.checked == 2 and report.mismatches == []


def test_a_changed_accelerator_is_reported_field_by_field() -> None:
    device = TRN1_32XL["NeuronInfo"]["NeuronDevices"][0] | {
        "Name": "Trainium2",
        "CoreInfo": {"Count": 8, "Version": 3},
        "MemoryInfo": {"SizeInMiB": 98304},
    }
    trn = TRN1_32XL | {"NeuronInfo": {"NeuronDevices": [device], "TotalNeuronDeviceMemoryInMiB": 16 * 98304}}
    gpu = G6_XL["GpuInfo"]["Gpus"][0] | {"Name": "L40S", "Count": 2}
    g6 = G6_XL | {"GpuInfo": {"Gpus": [gpu], "TotalGpuMemoryInMiB": 2 * 22888}}
    report = verify(SPECS, _stubbed_facts([trn, g6]), [], cores_per_device)
    assert sorted(str(m) for m in report.mismatches) == [
        "g6.xlarge: accelerator_count catalog=1 ec2=2",
        "g6.xlarge: accelerator_name catalog='NVIDIA L4' ec2='NVIDIA L40S'",
        "trn1.32xlarge: accelerator_memory_gib catalog=32.0 ec2=96.0",
        "trn1.32xlarge: accelerator_name catalog='AWS Trainium' ec2='AWS Trainium2'",
        "trn1.32xlarge: neuron_cores_per_device catalog=2 ec2=8",
    ]
