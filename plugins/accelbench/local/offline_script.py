"""A module of this package run as a script under another environment's interpreter, offline.

The model conversion and the quantization run in environments of their own (vLLM's, llmcompressor's),
which need not have accelbench installed, and adding this one's site-packages to them would mix two
torch/transformers stacks: the module's file is run as a script, `-P` (its folder is not put on
sys.path), with no model hub reachable, and the child dies with this process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from accelbench.core.offline import OFFLINE
from accelbench.lifetime import die_with_parent


def run_offline(python: Path, script: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -P script args...`, its output captured; the caller judges the return code."""
    return subprocess.run(
        [str(python), "-P", str(Path(script).resolve()), *args],
        capture_output=True,
        text=True,
        env=os.environ | OFFLINE,
        timeout=timeout,
        check=False,
        preexec_fn=die_with_parent,
    )
