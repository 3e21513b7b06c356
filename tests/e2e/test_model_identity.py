"""A model's identity on the real folders (issue 28): the converted real model and the tests' tiny model
name themselves through their provenance files, so their rows name the same model from any checkout."""

from __future__ import annotations

from pathlib import Path

from accelbench.core.model_origin import ModelIdentity, converted_model_id, model_identity
from accelbench.local import real_model as rm
from accelbench.local import tiny_model as tiny


def test_the_real_model_is_named_by_its_gguf_and_upstream_wherever_it_is_served_from(
    real_model: Path, tmp_path: Path
) -> None:
    prov = rm.provenance(real_model)
    expected = converted_model_id(rm.UPSTREAM, prov["source"]["gguf_sha256"], rm.CONVERSION)
    assert expected == f"gguf-{real_model.name}/{rm.UPSTREAM}"  # the cache key, then the upstream id
    assert prov.get("model_id", expected) == expected  # a folder converted before model_id: the same id
    # The demo serves it through a link named by the cache key (<models>/<key>/SmolLM2-135M-Instruct).
    link = tmp_path / "models" / real_model.name / rm.MODEL_NAME
    link.parent.mkdir(parents=True)
    link.symlink_to(real_model.resolve(), target_is_directory=True)
    for folder in (real_model, link):
        assert model_identity(str(folder)) == ModelIdentity(expected, str(folder), "provenance")


def test_the_tiny_model_is_named_by_what_it_was_built_from(tiny_model: Path) -> None:
    identity = model_identity(str(tiny_model))
    assert identity == ModelIdentity(tiny.model_id(), str(tiny_model), "provenance")
