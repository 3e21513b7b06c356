"""Planning's check of streamed weights (issue 49, point 2: `accelbench.campaign.weights`) against a moto S3
server on loopback, and its refusal through the campaign's planning naming ACCELBENCH_WEIGHTS_URI."""

from __future__ import annotations

import boto3
import pytest
from accelbench.campaign.weights import WEIGHTS_SETTING, weights_problems

BUCKET = "weights-check"


@pytest.fixture
def store(aws_on_moto) -> str:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    for key in ("org/good/config.json", "org/good/model.safetensors", "org/good/tokenizer.json"):
        s3.put_object(Bucket=BUCKET, Key=f"models/{key}", Body=b"{}")
    for key in ("org/gguf/config.json", "org/gguf/model.gguf"):
        s3.put_object(Bucket=BUCKET, Key=f"models/{key}", Body=b"{}")
    return f"s3://{BUCKET}/models"


def test_each_streamed_models_folder_needs_its_config_and_safetensors(store: str) -> None:
    assert weights_problems(["org/good"], store) == []
    gguf, absent = weights_problems(["org/gguf", "org/absent", "org/good"], store)
    assert (gguf.field, gguf.value) == (WEIGHTS_SETTING, store)
    assert (
        "models/org/gguf (model org/gguf) lacks a *.safetensors (the streamer reads no other format)"
        in gguf.message
    )
    assert "lacks config.json and a *.safetensors" in absent.message
    (bad,) = weights_problems(["org/good"], "https://example.com/models")
    assert bad.field == WEIGHTS_SETTING and "not s3://bucket" in bad.message
    assert weights_problems(["org/good"], None) == []  # unset: the Hub, nothing to check


def test_a_worker_without_credentials_is_told_which_setting_and_folder(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # a new client, without the keys
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    (problem,) = weights_problems(["org/good"], store)
    s3fs.S3FileSystem.clear_instance_cache()
    assert problem.field == WEIGHTS_SETTING
    assert f"{store}/org/good could not be listed (" in problem.message and "credentials" in problem.message


def test_planning_refuses_a_model_without_streamable_weights_and_streams_one_with_them(
    store: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the campaign's one entry point: Qwen's folder absent from the store is refused before any
    node is bought, naming the setting; uploaded, every server streams it."""
    from accelbench.campaign.matrix import matrix_at
    from accelbench.campaign.prepare import prepare_campaign
    from accelbench.core.problems import PlanningError

    from tests.integration.test_campaign_rules import KUBERNETES, MATRIX, MODEL, STORE

    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", str(STORE))
    monkeypatch.setenv("ACCELBENCH_WEIGHTS_URI", store)
    from accelbench.catalog.db import make_engine, migrate
    from accelbench.catalog.seed import upsert_instance_types
    from accelbench.tiers import load_seed

    eng = make_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate(eng)
    upsert_instance_types(eng, load_seed())
    request = matrix_at(MATRIX, "0.19.1", "kubernetes")
    with pytest.raises(PlanningError) as refused:
        prepare_campaign(request, eng, "c1", KUBERNETES)
    assert [p.field for p in refused.value.problems] == [WEIGHTS_SETTING]
    assert f"models/{MODEL} (model {MODEL}) lacks config.json" in refused.value.problems[0].message
    s3 = boto3.client("s3")
    for name in ("config.json", "model.safetensors"):
        s3.put_object(Bucket=BUCKET, Key=f"models/{MODEL}/{name}", Body=b"{}")
    specs = prepare_campaign(request, eng, "c1", KUBERNETES).specs
    assert {s.server.weights_uri for s in specs} == {f"{store}/{MODEL}"} and len(specs) == 2
    eng.dispose()


def _copy_in_a_process(uri: str, folder: str, out: str) -> None:
    """A second pod's init container on the same node: its own process, the same cache folder."""
    import json
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "accelbench.loadgen.weights_cache", uri, folder],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=False,
    )
    with open(out, "w") as fh:
        json.dump({"rc": proc.returncode, "log": proc.stderr}, fh)


def test_a_nodes_copy_is_fetched_once_whole_reused_and_fetched_again_when_the_weights_change(
    store: str, tmp_path
) -> None:
    """The Neuron tier's node cache (issue 49, point 2: `accelbench.loadgen.weights_cache`, the `weights`
    init container): two pods starting together on one node download the folder once (the other waits on
    the lock and finds the copy), the copy equals the bucket byte for byte, the next pod downloads nothing,
    and replaced weights are downloaded again; a folder with nothing in it fails naming it."""
    import json
    import threading

    from accelbench.loadgen.weights_cache import MANIFEST, fetch

    s3 = boto3.client("s3")
    weights = bytes(range(256)) * 4096  # 1 MiB
    key = f"models/org/cached-{tmp_path.name}"  # this test's own: other lanes share the bucket
    for name, body in (("config.json", b"{}"), ("tokenizer.json", b"{}"), ("model.safetensors", weights)):
        s3.put_object(Bucket=BUCKET, Key=f"{key}/{name}", Body=body)
    uri, folder = f"s3://{BUCKET}/{key}", tmp_path / "node" / BUCKET / key
    outs = [tmp_path / f"pod{i}.json" for i in range(2)]
    pods = [threading.Thread(target=_copy_in_a_process, args=(uri, str(folder), str(o))) for o in outs]
    for pod in pods:
        pod.start()
    for pod in pods:
        pod.join(timeout=120)
    logs = [json.loads(o.read_text()) for o in outs]
    assert [r["rc"] for r in logs] == [0, 0], logs
    said = sorted("in the node's cache" in r["log"] for r in logs)
    assert said == [False, True], [r["log"] for r in logs]  # one downloaded, the other found its copy
    assert (folder / "model.safetensors").read_bytes() == weights
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["config.json", "model.safetensors", "tokenizer.json", MANIFEST]
    )
    assert not list(folder.parent.glob("*.partial"))
    again = fetch(uri, folder)
    assert again.cached and again.files == 3 and again.bytes == len(weights) + 4
    s3.put_object(Bucket=BUCKET, Key=f"{key}/model.safetensors", Body=weights[::-1])
    changed = fetch(uri, folder)
    assert not changed.cached and (folder / "model.safetensors").read_bytes() == weights[::-1]
    with pytest.raises(FileNotFoundError, match="org/absent holds no files"):
        fetch(f"{store}/org/absent", tmp_path / "absent")
    assert not (tmp_path / "absent").exists()
