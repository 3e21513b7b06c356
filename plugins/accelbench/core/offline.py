"""The environment that keeps Hugging Face's libraries (transformers, datasets, the hub client) off the
network: the project fetches nothing from a model hub at run time, so a subprocess that imports them gets
this."""

from __future__ import annotations

OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TQDM_DISABLE": "1",
}
