"""Compare catalog rows with what EC2 says; report mismatches, never overwrite the seed data."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from accelbench.aws.ec2 import Ec2Facts
from accelbench.catalog.seed_file import InstanceSpec

log = logging.getLogger(__name__)
# Ranks per device of a type that EC2 also reports (CoreInfo.Count: NeuronCores per Neuron device), as its
# tier says (accelbench.tiers: Tier.cores_per_device); None where the tier has no such count.
CoresPerDevice = Callable[[InstanceSpec], int | None]


@dataclass(frozen=True)
class Mismatch:
    instance_type: str
    field: str
    catalog: object
    ec2: object

    def __str__(self) -> str:
        return f"{self.instance_type}: {self.field} catalog={self.catalog!r} ec2={self.ec2!r}"


@dataclass
class VerifyReport:
    checked: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    not_offered: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.checked} verified against EC2, {len(self.mismatches)} mismatches, "
            f"{len(self.not_offered)} not offered in the region"
        )


def compare(spec: InstanceSpec, facts: Ec2Facts, cores_per_device: CoresPerDevice) -> list[Mismatch]:
    found = []
    checks: list[tuple[str, object, object, bool]] = [
        ("vcpu", spec.vcpu, facts.vcpu, spec.vcpu == facts.vcpu),
        (
            "memory_gib",
            spec.memory_gib,
            facts.memory_gib,
            math.isclose(spec.memory_gib, facts.memory_gib, rel_tol=1e-6),
        ),
        (
            "architecture",
            spec.architecture,
            list(facts.architectures),
            spec.architecture in facts.architectures,
        ),
        (
            "accelerator_count",
            spec.accelerator_count,
            facts.accelerator_count,
            spec.accelerator_count == facts.accelerator_count,
        ),
        (
            "accelerator_memory_gib",
            spec.accelerator_memory_gib,
            facts.accelerator_memory_gib,
            math.isclose(spec.accelerator_memory_gib, facts.accelerator_memory_gib, rel_tol=1e-6),
        ),
    ]
    if facts.max_pods is not None:
        checks.append(("max_pods", spec.max_pods, facts.max_pods, spec.max_pods == facts.max_pods))
    acc_name, ec2_name = spec.accelerator_name, facts.accelerator_name
    checks.append(("accelerator_name", acc_name, ec2_name, acc_name == ec2_name))
    # Neuron planning shards over NeuronCores by its tier's table (None off Neuron); EC2's CoreInfo.Count
    # checks it.
    cores, ec2_cores = cores_per_device(spec), facts.neuron_cores_per_device
    checks.append(("neuron_cores_per_device", cores, ec2_cores, cores == ec2_cores))
    for name, ours, theirs, ok in checks:
        if not ok:
            found.append(Mismatch(spec.instance_type, name, ours, theirs))
    return found


def verify(
    specs: list[InstanceSpec],
    facts: dict[str, Ec2Facts],
    not_offered: list[str],
    cores_per_device: CoresPerDevice,
) -> VerifyReport:
    report = VerifyReport(not_offered=sorted(not_offered))
    for spec in specs:
        if spec.instance_type not in facts:
            continue
        report.checked += 1
        report.mismatches.extend(compare(spec, facts[spec.instance_type], cores_per_device))
    for m in report.mismatches:
        log.warning("catalog/EC2 mismatch (catalog kept as is): %s", m)
    for name in report.not_offered:
        log.warning("%s: EC2 does not offer this type in the region checked", name)
    log.info("instance catalog verification: %s", report.summary())
    return report
