"""What campaigns are planned against in tests: the seed catalog and the model configs in tests/data."""

from __future__ import annotations

from typing import Any

import pytest
from accelbench.campaign.plan import Plan, RuntimeBuild, plan_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.core.problems import PlanningError
from accelbench.sizing.model_config import load_model_shape
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


def plan(**fields: Any) -> Plan:
    """A campaign of the tiny model (unless `fields` name another) planned against the seed catalog."""
    req = CampaignRequest(**({"model": "local/tiny-llama"} | fields))
    return plan_campaign(req, CATALOG, "0.19.1", "c-1", load_shape=lambda m: load_model_shape(m, STORE))


def problems(**fields: Any) -> dict[str, str]:
    """What planning refuses in the request `fields`: field -> "value: why"."""
    with pytest.raises(PlanningError) as err:
        plan(**fields)
    return {p.field: f"{p.value!r}: {p.message}" for p in err.value.problems}
