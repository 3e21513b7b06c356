"""What a vLLM server's own log says it served: the quantization scheme and the kernel it chose.

A quantized checkpoint that vLLM could not serve as such would be an error, but a server can also serve
an unquantized model where a quantized one was meant (the wrong folder): the planned `quantization` is
what was asked, this is what ran. vLLM 0.32 logs, once per scheme, "Selected CPUInt8ScaledMMLinearKernel for
CompressedTensorsW8A8Int8" or "Using Dynamic4bitLinearKernel for CompressedTensorsW4A8Int", and its engine
line "quantization=compressed-tensors" (or "quantization=None")."""

from __future__ import annotations

import re

_KERNEL = re.compile(r"\b(?:Selected|Using) (\w+) for (\w+)\s*$", re.MULTILINE)
_ENGINE = re.compile(r"Initializing a V1 LLM engine .*?\bquantization=([\w-]+)")
UNQUANTIZED = "none"  # the engine said quantization=None
LOG_HEAD_BYTES = 4 << 20  # the log's head, where the server says what it loaded: read no more of it


def reported_quantization(log_text: str) -> str | None:
    """ "CompressedTensorsW8A8Int8 (CPUInt8ScaledMMLinearKernel)": each scheme the server's log names with
    the kernel it chose, "; "-joined in the order logged; "compressed-tensors" when the engine line names a
    method but no scheme line was logged; UNQUANTIZED when it said None; None when the log says neither
    (an older vLLM, a truncated log)."""
    found = dict.fromkeys(f"{scheme} ({kernel})" for kernel, scheme in _KERNEL.findall(log_text))
    if found:
        return "; ".join(found)
    engine = _ENGINE.search(log_text)
    if engine is None:
        return None
    return UNQUANTIZED if engine.group(1) == "None" else engine.group(1)
