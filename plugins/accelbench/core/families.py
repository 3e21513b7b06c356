"""Instance type names, architectures, and why Graviton2 is refused. Which families each tier carries is
the tier's own fact (accelbench.tiers)."""

from __future__ import annotations

import re

from accelbench.errors import UnsupportedInstanceType

ARCHITECTURES = ("arm64", "x86_64")
# Graviton generation by the digit in an r/m/c/x family name (r8g -> 8).
GRAVITON_GENERATIONS = {"6": "graviton2", "7": "graviton3", "8": "graviton4", "9": "graviton5"}
GRAVITON2_FAMILIES = frozenset(
    {"m6g", "m6gd", "c6g", "c6gd", "c6gn", "r6g", "r6gd", "x2gd", "t4g", "im4gn", "is4gen", "g5g"}
)
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
