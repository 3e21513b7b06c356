"""What campaigns are planned against in tests: the seed catalog and the model configs in tests/data."""

from __future__ import annotations

from accelbench.campaign.plan import RuntimeBuild
from accelbench.tiers import load_seed

from tests.support.paths import REPO

# A model store (ACCELBENCH_MODEL_STORE) holding config.json files only, local/tiny-llama among them.
STORE = str(REPO / "tests" / "data" / "model_configs")
CATALOG = {s.instance_type: s for s in load_seed()}
# Release discovery records the Neuron image's full tag (it cannot be computed from the version): this one as
# AWS's ECR Public lists it, of the 0.16 line, the newest vLLM-Neuron line for Inferentia2 and Trainium1.
NEURON_BUILD = RuntimeBuild(
    "0.16.0",
    image="public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:0.16.0-neuronx-py312-sdk2.31.1-ubuntu24.04",
)
BUILDS = {"vllm-neuron": NEURON_BUILD}
