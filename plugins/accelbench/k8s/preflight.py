"""What kubernetes mode needs before a pod is started, checked in the plan task with every other problem.

Each missing piece would otherwise surface only after a node was bought and an image pulled (or as a raw
client traceback): the pods write their evidence to the lake themselves (so it must be s3://), they run the
load-generator image built from docker/loadgen (there is no public default), and the server loads the model
by its id, so the planner's config.json must come from the model store, not from a path on the worker.
"""

from __future__ import annotations

import re
from pathlib import Path

from accelbench.config import LAKE_SETTING, Settings
from accelbench.core.problems import Problem
from accelbench.errors import ConfigError
from accelbench.k8s.pod import LOADGEN_IMAGE_SETTING
from accelbench.sizing.model_config import MODEL_STORE_SETTING, find_config

# A container image reference: [registry[:port]/]path[:tag][@sha256:digest], nothing a shell or YAML reads.
_NAME = r"[a-z0-9]+(?:[._-][a-z0-9]+)*"
IMAGE_REFERENCE = re.compile(
    rf"{_NAME}(?:\.{_NAME})*(?::[0-9]+)?(?:/{_NAME})*(?::\w[\w.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?"
)


def kubernetes_problems(model: str, lake_uri: str) -> list[Problem]:
    """Lake, load-generator image and model store, each named by its setting."""
    problems = []
    if not lake_uri.startswith("s3://"):
        why = "kubernetes mode needs an s3:// lake: the benchmark pods write their evidence to it"
        problems.append(Problem(LAKE_SETTING, lake_uri, why))
    settings = Settings.from_env("loadgen_image", "model_store")
    image = settings.kubernetes.loadgen_image
    if not image:
        why = (
            "unset: kubernetes mode needs the load-generator image built from docker/loadgen and pushed to a "
            "registry the nodes pull from (docs/guides/deploy-on-eks.md)"
        )
        problems.append(Problem(LOADGEN_IMAGE_SETTING, None, why))
    elif not IMAGE_REFERENCE.fullmatch(image):
        problems.append(Problem(LOADGEN_IMAGE_SETTING, image, "not a container image reference"))
    store = settings.library.model_store

    try:
        config = find_config(model)
    except ConfigError:
        return problems  # the planner reports the missing model, naming the store setting
    in_store = bool(store) and Path(store).expanduser().resolve() in config.resolve().parents
    if not in_store:
        why = (
            f"is a path on the worker ({config.parent}), which a benchmark pod cannot read: add its "
            f"config.json to the model store ({MODEL_STORE_SETTING}) and name the model by its id"
        )
        problems.append(Problem("model", model, why))
    return problems
