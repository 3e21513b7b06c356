"""Weights streamed from object storage (issue 49, point 2): with ACCELBENCH_WEIGHTS_URI set, a vLLM server
loads its model's `*.safetensors` from `<prefix>/<model id>/` with vLLM's Run:ai model streamer
(`--load-format runai_streamer`, the recipe's) instead of downloading them from the Hugging Face Hub: no
second copy on the node's disk, and the bucket's bandwidth rather than the Hub's (issue 49: every pod of a
campaign downloaded its weights anew).

Planning checks the folders before any node is bought: the prefix names a bucket, and each model's folder
lists its `config.json` and at least one `*.safetensors` (the streamer reads no other format) with the
worker's credentials, which on EKS are the Airflow workers' role; the benchmark pods' role reads the lake
bucket's `models/` prefix (infra/terraform). A runtime without a streamer (the Neuron tier's DLC) serves a
copy its node keeps: the pod's `weights` init container fetches the folder once per node
(`accelbench.loadgen.weights_cache`) and the next pod on that node finds it there. A local folder nothing
names keeps its source.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from accelbench.config import Settings, env_name
from accelbench.core.model_origin import model_identity
from accelbench.core.problems import Problem

WEIGHTS_SETTING = env_name("weights_uri")
_S3_PREFIX = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?")


def weights_prefix() -> str | None:
    """ACCELBENCH_WEIGHTS_URI without its trailing slash; None: unset (the Hub)."""
    prefix = Settings.from_env("weights_uri").library.weights_uri.strip()
    return prefix.rstrip("/") or None


def stream_id(model: str) -> str | None:
    """The id a model's weights are streamed by (its folder under the prefix): a model id itself; a local
    folder's id from its provenance or config (`core.model_origin`: the client still reads the folder's
    tokenizer); None for a folder nothing names, which is served from its folder."""
    identity = model_identity(model)
    return None if identity.source == "path" else identity.model_id


def weights_uri(model_id: str | None, prefix: str | None) -> str | None:
    """Where a server's weights come from (None: its id or folder, as before): the model's folder under
    `prefix` when the model has an id; the runtime streams them from there, or serves the copy its node
    keeps (`runtime.recipes.Recipe.args`)."""
    if prefix is None or not model_id:
        return None
    return f"{prefix}/{model_id.strip('/')}"


def weights_problems(models: Iterable[str], prefix: str | None) -> list[Problem]:
    """Each model's streamed folder (`stream_id`), listed with the worker's credentials: it must hold
    `config.json` and a `*.safetensors`; every problem names ACCELBENCH_WEIGHTS_URI."""
    if prefix is None:
        return []
    if not _S3_PREFIX.fullmatch(prefix):
        return [Problem(WEIGHTS_SETTING, prefix, "not s3://bucket[/prefix]: the streamer reads S3")]
    from fsspec.core import url_to_fs  # s3fs, as the lake: at call time (DAG files import planning)

    from accelbench.lake.store import storage_options

    fs, _ = url_to_fs(prefix, **storage_options(prefix))
    problems = []
    for model in dict.fromkeys(i for i in map(stream_id, models) if i):
        folder = f"{prefix}/{model.strip('/')}"
        try:
            names = {posixpath.basename(str(p).rstrip("/")) for p in fs.ls(folder, refresh=True)}
        except FileNotFoundError:
            names = set()
        except Exception as exc:  # credentials, a missing bucket, the endpoint: say which and where
            why = (
                f"{folder} could not be listed ({type(exc).__name__}: {exc}): the worker needs AWS "
                "credentials that read it (the benchmark pods' role reads the lake bucket's models/)"
            )
            problems.append(Problem(WEIGHTS_SETTING, prefix, why))
            continue
        missing = [
            what
            for what, found in (
                ("config.json", "config.json" in names),
                (
                    "a *.safetensors (the streamer reads no other format)",
                    any(n.endswith(".safetensors") for n in names),
                ),
            )
            if not found
        ]
        if missing:
            lacks = " and ".join(missing)
            why = f"{folder} (model {model}) lacks {lacks}: upload the model's files as the Hub has them"
            problems.append(Problem(WEIGHTS_SETTING, prefix, why))
    return problems
