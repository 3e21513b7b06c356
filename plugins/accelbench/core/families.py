"""Which instance families the suite accepts, and why Graviton2 is refused."""

from __future__ import annotations

import re

from accelbench.errors import UnsupportedInstanceType

ACCELERATOR_TYPES = ("gpu", "neuron", "cpu")
ARCHITECTURES = ("arm64", "x86_64")
# Graviton generation by the digit in an r/m/c/x family name (r8g -> 8).
GRAVITON_GENERATIONS = {"6": "graviton2", "7": "graviton3", "8": "graviton4", "9": "graviton5"}
GRAVITON2_FAMILIES = frozenset(
    {"m6g", "m6gd", "c6g", "c6gd", "c6gn", "r6g", "r6gd", "x2gd", "t4g", "im4gn", "is4gen", "g5g"}
)
# Families the CPU tier benchmarks; r9g is accepted ahead of its launch (none in the seed yet).
CPU_FAMILIES = frozenset({"r7g", "m7g", "c7g", "r8g", "m8g", "c8g", "r9g", "m9g", "c9g"})
# Families of the accelerated tiers: GPU (NVIDIA, the vLLM OpenAI image) and Neuron (Inferentia2 and
# Trainium1, the Neuron vLLM image). Each type's facts are in the catalog seed; its tier picks the runtime
# (TIER_RUNTIME).
GPU_FAMILIES = frozenset({"g5", "g6", "g6e", "p5"})
NEURON_FAMILIES = frozenset({"inf2", "trn1"})
# The families each tier (accelerator_type) may carry.
TIER_FAMILIES = {"cpu": CPU_FAMILIES, "gpu": GPU_FAMILIES, "neuron": NEURON_FAMILIES}
# The server recipe of each tier (accelbench.runtime.recipes): a campaign's runtime follows its types' tiers.
TIER_RUNTIME = {"cpu": "vllm-cpu", "gpu": "vllm-gpu", "neuron": "vllm-neuron"}
# NeuronCores per Neuron device (Inferentia2 and Trainium1 each have two NeuronCore-v2): vLLM on Neuron shards
# a model over NeuronCores (--tensor-parallel-size), the device plugin hands out whole devices.
NEURON_CORES_PER_DEVICE = {"inf2": 2, "trn1": 2}
GRAVITON2_REASON = (
    "Graviton2 (Neoverse-N1) lacks FEAT_BF16 (Armv8.6), which vLLM's Arm CPU path needs; "
    "use a Graviton3 or newer family (r7g/m7g/c7g, r8g/m8g/c8g, m9g/c9g)"
)
_TYPE = re.compile(r"^(?P<family>[a-z][a-z0-9-]*)\.(?P<size>[a-z0-9-]+)$")


def split_instance_type(instance_type: str) -> tuple[str, str]:
    """'r8g.4xlarge' -> ('r8g', '4xlarge'); a malformed name is an error that names it."""
    m = _TYPE.match(instance_type)
    if not m:
        raise UnsupportedInstanceType(
            "instance_type", instance_type, "not an EC2 instance type name (family.size)"
        )
    return m["family"], m["size"]


def refuse_graviton2(instance_type: str, field: str = "instance_type") -> None:
    family, _ = split_instance_type(instance_type)
    if family in GRAVITON2_FAMILIES:
        raise UnsupportedInstanceType(field, instance_type, GRAVITON2_REASON)


def is_bare_metal(instance_type: str) -> bool:
    """EC2 bare-metal sizes: 'metal', 'metal-24xl', 'metal-48xl'."""
    return split_instance_type(instance_type)[1].startswith("metal")
