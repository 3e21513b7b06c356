"""Where a spec ran, as the host itself says: CPU model, architecture, vCPUs, kernel, EC2 instance type, GPUs.

Read from local files only (/proc/cpuinfo, the DMI table under /sys) and the tiers' device probes
(nvidia-smi), never the network or the EC2 metadata service. The load generator (in a pod, /proc and /sys
are the node's) and the local executor record these in execution.json, so that a row measured on a
stand-in host (a laptop, a CI machine) is never priced or ranked as the instance type it planned
(`runs.measured_on_instance`).
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import TypedDict

from accelbench.tiers import devices_here

PROC = Path("/proc")
DMI = Path("/sys/devices/virtual/dmi/id")
EC2_VENDOR = "Amazon EC2"  # DMI sys_vendor of a Nitro instance, whose product_name is its instance type
# platform.machine() as the catalog names architectures (core.families.ARCHITECTURES).
ARCHITECTURES = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "x86_64", "amd64": "x86_64"}
# arm64's /proc/cpuinfo has no "model name", only the implementer and part codes of the core.
ARM_IMPLEMENTERS = {0x41: "Arm", 0x61: "Apple", 0xC0: "Ampere"}
# (implementer, part) -> (core, the Graviton built on it). The Graviton is named only on EC2: an
# Ampere Altra is a Neoverse-N1 as well.
ARM_CORES = {
    (0x41, 0xD08): ("Cortex-A72", "Graviton"),
    (0x41, 0xD0C): ("Neoverse-N1", "Graviton2"),
    (0x41, 0xD40): ("Neoverse-V1", "Graviton3"),
    (0x41, 0xD4F): ("Neoverse-V2", "Graviton4"),
}


class HostFacts(TypedDict):
    """The execution.json keys (lake.ingest.Provenance fields) that describe the host."""

    host_cpu_model: str | None
    host_architecture: str | None
    host_vcpus: int | None
    host_kernel: str | None
    host_instance_type: str | None
    host_accelerators: str | None


def host_facts(proc: Path = PROC, dmi: Path = DMI) -> HostFacts:
    """This machine's facts; a fact it cannot read is None (never an error: the run itself is done). Its
    accelerators are what each tier's device probe finds (accelbench.tiers.devices_here: nvidia-smi's GPUs).

    host_vcpus is os.cpu_count(), the machine's online CPUs, not this process's affinity: it is compared
    with the instance type's vCPUs, and a local run's pinning is recorded apart (`pinning`).
    """
    on_ec2 = _read(dmi / "sys_vendor") == EC2_VENDOR
    machine = platform.machine()
    return {
        "host_cpu_model": cpu_model(_cpuinfo(proc / "cpuinfo"), on_ec2),
        "host_architecture": ARCHITECTURES.get(machine.lower(), machine) or None,
        "host_vcpus": os.cpu_count(),
        "host_kernel": platform.release() or None,
        "host_instance_type": (_read(dmi / "product_name") or None) if on_ec2 else None,
        "host_accelerators": devices_here(),
    }


def cpu_model(cpuinfo: dict[str, str], on_ec2: bool) -> str | None:
    """x86's "model name"; on arm64 the core named from its codes (and its Graviton, on EC2)."""
    if cpuinfo.get("model name"):
        return cpuinfo["model name"]
    implementer, part = _hex(cpuinfo.get("CPU implementer")), _hex(cpuinfo.get("CPU part"))
    if implementer is None or part is None:
        return platform.processor() or None
    vendor = ARM_IMPLEMENTERS.get(implementer, f"implementer {implementer:#04x}")
    core, graviton = ARM_CORES.get((implementer, part), (f"part {part:#05x}", None))
    return f"{vendor} {core}" + (f" (AWS {graviton})" if graviton and on_ec2 else "")


def _cpuinfo(path: Path) -> dict[str, str]:
    """The first processor's block of /proc/cpuinfo ("key\\t: value" lines up to the first blank one)."""
    fields: dict[str, str] = {}
    for line in (_read(path) or "").splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def _hex(text: str | None) -> int | None:
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:  # absent (not Linux, no DMI in this VM) or unreadable
        return None
