"""What campaigns are planned against in tests: the seed catalog and the model configs in tests/data."""

from __future__ import annotations

from accelbench.catalog.seed_file import load_seed

from tests.support.paths import REPO

# A model store (ACCELBENCH_MODEL_STORE) holding config.json files only, local/tiny-llama among them.
STORE = str(REPO / "tests" / "data" / "model_configs")
CATALOG = {s.instance_type: s for s in load_seed()}
