"""EC2 DescribeInstanceTypes, reduced to the facts the catalog seed claims."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

log = logging.getLogger(__name__)
BATCH = 100  # DescribeInstanceTypes accepts at most 100 names per call
# NeuronInfo.NeuronDevices[] carries no Manufacturer (GpuInfo.Gpus[] does): AWS designs every Neuron device.
NEURON_MANUFACTURER = "AWS"


@dataclass(frozen=True)
class Ec2Facts:
    instance_type: str
    vcpu: int
    memory_gib: float
    architectures: tuple[str, ...]
    accelerator_count: int
    # Per accelerator (GpuInfo.Gpus[].MemoryInfo / NeuronInfo.NeuronDevices[].MemoryInfo), MiB / 1024.
    accelerator_memory_gib: float
    # ENI-limited pods, as Karpenter derives them; None when EC2 gave no NetworkInfo.
    max_pods: int | None = None
    # "Manufacturer Name" as the catalog writes it ("NVIDIA L4", "AWS Trainium"); None without accelerators.
    accelerator_name: str | None = None
    # NeuronInfo.NeuronDevices[].CoreInfo.Count: NeuronCores per device; None for GPU and CPU types.
    neuron_cores_per_device: int | None = None


def eni_limited_pods(network: dict[str, Any]) -> int | None:
    """Karpenter's ENILimitedPods (no reserved ENIs): default card's ENIs x (IPv4 per ENI - 1) + 2."""
    try:
        cards = network["NetworkCards"]
        index = network.get("DefaultNetworkCardIndex", 0)
        enis = next(c for c in cards if c.get("NetworkCardIndex", 0) == index)["MaximumNetworkInterfaces"]
        return int(enis) * (int(network["Ipv4AddressesPerInterface"]) - 1) + 2
    except (KeyError, StopIteration, TypeError, ValueError):
        return None


def _facts(item: dict[str, Any]) -> Ec2Facts:
    gpus = (item.get("GpuInfo") or {}).get("Gpus") or []
    neurons = (item.get("NeuronInfo") or {}).get("NeuronDevices") or []
    devices = gpus or neurons
    first = devices[0] if devices else {}
    maker = first.get("Manufacturer") if gpus else NEURON_MANUFACTURER
    name = " ".join(p for p in (maker, first.get("Name")) if p) if devices else None
    cores = (first.get("CoreInfo") or {}).get("Count") if neurons and not gpus else None
    return Ec2Facts(
        instance_type=item["InstanceType"],
        vcpu=item["VCpuInfo"]["DefaultVCpus"],
        memory_gib=item["MemoryInfo"]["SizeInMiB"] / 1024,
        architectures=tuple(item["ProcessorInfo"]["SupportedArchitectures"]),
        accelerator_count=sum(d.get("Count", 0) for d in devices),
        accelerator_memory_gib=first["MemoryInfo"]["SizeInMiB"] / 1024 if devices else 0.0,
        max_pods=eni_limited_pods(item.get("NetworkInfo") or {}),
        accelerator_name=name,
        neuron_cores_per_device=int(cores) if cores is not None else None,
    )


def _describe(ec2_client: Any, names: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for page in ec2_client.get_paginator("describe_instance_types").paginate(InstanceTypes=names):
        out.extend(page["InstanceTypes"])
    return out


def describe_instance_types(ec2_client: Any, names: list[str]) -> tuple[dict[str, Ec2Facts], list[str]]:
    """Facts per type, plus the names EC2 does not know in this region (batched, then one by one)."""
    facts: dict[str, Ec2Facts] = {}
    unknown: list[str] = []
    for start in range(0, len(names), BATCH):
        batch = names[start : start + BATCH]
        try:
            items = _describe(ec2_client, batch)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "InvalidInstanceType":
                raise
            items = []
            for name in batch:  # find which names the region does not offer
                try:
                    items.extend(_describe(ec2_client, [name]))
                except ClientError as one:
                    if one.response["Error"]["Code"] != "InvalidInstanceType":
                        raise
                    unknown.append(name)
        facts.update({i["InstanceType"]: _facts(i) for i in items})
    return facts, unknown
