"""A stand-in nvidia-smi: what the real one prints for the query accelbench.tiers.gpu sends, for the
tests of local mode on a GPU host (this machine has no GPU)."""

from __future__ import annotations

from pathlib import Path

from accelbench.tiers.gpu import NVIDIA_SMI_QUERY

# Two H100s as the driver lists them (p5: 81559 MiB each), and a driver that does not answer.
H100S = "NVIDIA H100 80GB HBM3, 81559, 570.124.06\nNVIDIA H100 80GB HBM3, 81559, 570.124.06\n"
NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


def fake_nvidia_smi(folder: Path, stdout: str, rc: int = 0) -> Path:
    """An nvidia-smi that answers only the query this suite sends (anything else fails loudly)."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "nvidia-smi"
    expected = " ".join(NVIDIA_SMI_QUERY)
    exe.write_text(
        "#!/bin/sh\n"
        f'[ "$*" = "{expected}" ] || {{ echo "unexpected arguments: $*" >&2; exit 64; }}\n'
        f"cat <<'EOF'\n{stdout.rstrip()}\nEOF\nexit {rc}\n"
    )
    exe.chmod(0o755)
    return exe
