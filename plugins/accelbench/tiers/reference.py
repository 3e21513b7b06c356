"""The tiers as the reference page lists them (docs/reference/tiers.md, scripts/gen_reference.py): every
registered tier's facts, read from the registry, so the page cannot drift from the code."""

from __future__ import annotations

from collections.abc import Iterable

from accelbench.tiers import all_tiers
from accelbench.tiers.base import Tier


def _code(values: Iterable[str]) -> str:
    return ", ".join(f"`{v}`" for v in sorted(values)) or "none"


def _row(t: Tier) -> list[str]:
    p = t.placement
    taints = ", ".join(f"`{x.key}={x.value}:{x.effect}`" for x in p.taints)
    daemonsets = ", ".join(f"`{d.name}` ({d.cpu_m}m, {d.memory_mib} MiB)" for d in p.daemonsets) or "none"
    startup = (
        f"+{t.startup.compile_base_s} s + {t.startup.compile_per_gib_s} s/GiB"
        if t.startup.compile_base_s or t.startup.compile_per_gib_s
        else "none"
    )
    local = f"`{t.local.folder}` (`{t.local.installer}`)" if t.local else "kubernetes mode only"
    security = ", ".join(t.security.add_capabilities) or "none"
    return [
        f"`{t.name}`",
        t.title,
        _code(t.families),
        f"`{t.runtime}`",
        f"`versions.{t.name}`" + (f" (or `{t.version_field}`)" if t.version_field else ""),
        f"`{p.nodepool}` ({p.architecture})",
        taints,
        f"`{p.device_resource}`" if p.device_resource else "none",
        daemonsets,
        startup,
        f"{security}; seccomp {t.security.seccomp}",
        f"`{t.forced_dtype}`" if t.forced_dtype else "the request's",
        local,
    ]


HEADER = [
    "tier",
    "what it is",
    "families",
    "runtime",
    "version field",
    "NodePool (node arch)",
    "taints its pods tolerate",
    "device resource",
    "its DaemonSets",
    "compile allowance",
    "server capabilities",
    "dtype",
    "local mode",
]


def reference_markdown() -> str:
    """One table, a row per registered tier, in registration order."""
    rows = [HEADER, ["---"] * len(HEADER), *(_row(t) for t in all_tiers())]
    return "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"
