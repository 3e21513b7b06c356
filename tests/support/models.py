"""A local model as a benchmark pod finds one it has downloaded: in an offline Hugging Face cache."""

from __future__ import annotations

from pathlib import Path

import pytest


def hub_model(model_dir: Path, where: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """`model_dir` as the model id `local/<name>` in an offline Hugging Face cache (HF_HOME, HF_HUB_OFFLINE
    set), as a benchmark pod finds a model it has downloaded, plus a model store with its config.json.
    Returns (model id, store)."""
    name = model_dir.name
    snapshot = where / "hf" / "hub" / f"models--local--{name}" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for file in model_dir.iterdir():
        (snapshot / file.name).symlink_to(file)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
    store = where / "model-store" / f"local--{name}"
    store.mkdir(parents=True)
    (store / "config.json").write_text((model_dir / "config.json").read_text())
    monkeypatch.setenv("HF_HOME", str(where / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return f"local/{name}", store.parent
