"""How vLLM reads an engine flag, so that a check of the flags a campaign passes cannot be dodged by another
spelling: '--tensor_parallel_size=4', an argparse prefix such as '--tensor-parallel', or a short alias."""

from __future__ import annotations

from collections.abc import Collection

# vLLM's short aliases of long flags.
SHORT_ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-q": "--quantization",
}


def canonical_flag(arg: str) -> str:
    """'--tensor_parallel_size=4' -> '--tensor-parallel-size'; '-tp' -> '--tensor-parallel-size'."""
    flag = arg.split("=", 1)[0]
    if flag in SHORT_ALIASES:
        return SHORT_ALIASES[flag]
    return "--" + flag.lstrip("-").replace("_", "-") if flag.startswith("--") else flag


def abbreviates(flag: str, known: Collection[str]) -> str | None:
    """argparse accepts unambiguous prefixes: '--tensor-parallel' means '--tensor-parallel-size'."""
    return next((k for k in sorted(known) if k != flag and k.startswith(flag)), None)


def matching(flag: str, known: Collection[str]) -> str | None:
    """The flag of `known` that `flag` names, exactly or as a prefix; None when it names none."""
    return flag if flag in known else abbreviates(flag, known)
