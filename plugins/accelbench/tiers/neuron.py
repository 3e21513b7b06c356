"""The Neuron tier: AWS Inferentia2 and Trainium1 with the Neuron vLLM DLC. A model is sharded over
NeuronCores (two per device on both) and compiled for a fixed batch (--max-num-seqs = the plan's most requests
in flight), whose whole KV cache must fit the devices' memory; compilation takes minutes per GiB."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import Field

from accelbench.catalog.seed_file import InstanceSpec
from accelbench.config import TierSettings, setting
from accelbench.core.problems import Problem
from accelbench.core.spec import LoadPlan, TierServerFields
from accelbench.errors import ConfigError
from accelbench.runtime.engine_args import canonical_flag, matching
from accelbench.runtime.recipes import VllmNeuron
from accelbench.sizing.accelerator import AcceleratorFit, plan_neuron_fit
from accelbench.sizing.daemonsets import DaemonSet
from accelbench.sizing.fit import Fit
from accelbench.tiers.base import Placement, Ranks, ServerRequest, Sizing, Startup, Taint, Tier

# NeuronCores per Neuron device (Inferentia2 and Trainium1 each have two NeuronCore-v2): vLLM on Neuron shards
# a model over NeuronCores (--tensor-parallel-size), the device plugin hands out whole devices.
CORES_PER_DEVICE = {"inf2": 2, "trn1": 2}


BATCH_FLAG = "--max-num-seqs"
SETTINGS_TITLE = "Neuron tier (vllm-neuron)"


class NeuronTierSettings(TierSettings):
    """The Neuron tier's image and the registry its releases are listed from."""

    title: ClassVar[str] = SETTINGS_TITLE
    vllm_neuron_image_repository: str = setting(
        "public.ecr.aws/neuron/pytorch-inference-vllm-neuronx",
        group=SETTINGS_TITLE,
        description="repository of the Neuron tier's image",
    )
    neuron_registry_url: str = setting(
        "",
        group=SETTINGS_TITLE,
        shown_default="`https://` + the registry host of `ACCELBENCH_VLLM_NEURON_IMAGE_REPOSITORY`",
        description="the OCI distribution API (`/v2/<name>/tags/list`, anonymous bearer token) that release "
        "discovery lists the Neuron DLC's tags from, e.g. a mirror or a test server; the recorded image "
        "keeps the repository's name",
    )


class NeuronServerFields(TierServerFields):
    """A Neuron server's own field: the batch the model is compiled for (requests in flight at most), the
    plan's top concurrency."""

    max_num_seqs: int | None = Field(default=None, ge=1)

    def engine_args(self) -> list[str]:
        if self.max_num_seqs is None:
            why = "the Neuron tier compiles the model for a fixed batch: the planner sets it"
            raise ConfigError("max_num_seqs", None, why)
        return [BATCH_FLAG, str(self.max_num_seqs)]


@dataclass(frozen=True)
class NeuronTier(Tier):
    cores_by_family: Mapping[str, int] = field(default_factory=dict)

    def request_problems(self, request: ServerRequest, instance_types: Sequence[str]) -> list[Problem]:
        """The compiled batch is the planner's (the largest concurrency): a campaign with a Neuron type may
        not set it (`instance_types`: the campaign's Neuron types)."""
        on = f" (the Neuron types of this campaign: {', '.join(instance_types)})" if instance_types else ""
        why = f"{BATCH_FLAG} is set by the planner from the largest concurrency (the compiled batch){on}"
        return [
            Problem(f"extra_engine_args[{i}]", arg, why)
            for i, arg in enumerate(request.extra_engine_args)
            if matching(canonical_flag(arg), (BATCH_FLAG,))
        ]

    def cores_per_device(self, spec: InstanceSpec) -> int | None:
        return self.cores_by_family.get(spec.family)

    def ranks(self, spec: InstanceSpec) -> Ranks:
        return Ranks(spec.accelerator_count * self.cores_by_family[spec.family], "NeuronCores")

    def load_problems(self, load: LoadPlan) -> list[Problem]:
        if load.search is None or load.search.variable == "concurrency":
            return []
        why = (
            "a Neuron server is compiled for a fixed batch (--max-num-seqs), taken from the most requests in "
            "flight: search over concurrency on Neuron types"
        )
        return [Problem("search_variable", load.search.variable, why)]

    def fit(self, sizing: Sizing) -> AcceleratorFit:
        return plan_neuron_fit(
            sizing.shape,
            devices=sizing.instance.accelerator_count,
            memory_per_device_gib=sizing.instance.accelerator_memory_gib,
            context_len=sizing.request.context_len,
            concurrency=sizing.concurrency,
            kv_cache_dtype=sizing.request.kv_cache_dtype,
        )

    def refusal(self, fit: Fit, sizing: Sizing, catalog: Mapping[str, InstanceSpec]) -> str:
        request = sizing.request
        return (
            f"{request.model} does not fit: {fit.describe()}; the KV cache of {sizing.concurrency} sequences "
            f"(--max-num-seqs) of {request.context_len} tokens needs {fit.kv_needed_gib:.2f} GiB: short by "
            f"{fit.shortfall_gib:.2f} GiB. lower the largest concurrency, shorten the workload, or use a "
            "type with more Neuron devices"
        )

    def server_fields(self, request: ServerRequest, load: LoadPlan) -> NeuronServerFields:
        return NeuronServerFields(max_num_seqs=self.concurrency(load))


NEURON = NeuronTier(
    name="neuron",
    title="Neuron (AWS Inferentia2, Trainium1, the Neuron vLLM image)",
    families=frozenset(CORES_PER_DEVICE),
    recipe=VllmNeuron(),
    placement=Placement(
        nodepool="accelbench-neuron",
        architecture="amd64",
        taints=(Taint("aws.amazon.com/neuron", "true"), Taint("accelbench.io/dedicated", "true")),
        device_resource="aws.amazon.com/neuron",
        daemonsets=(
            DaemonSet(
                "kube-system/accelbench-neuron-device-plugin",
                100,
                256,
                "infra/k8s/device-plugins/neuron-device-plugin.yaml: requests = limits 100m/256Mi "
                "(the Neuron chart sets none)",
            ),
        ),
    ),
    # neuronx-cc compiles the model for its batch and ranks before /health answers: minutes per GiB.
    startup=Startup(compile_base_s=900, compile_per_gib_s=120),
    version_field="neuron_version",
    cores_by_family=CORES_PER_DEVICE,
    server_model=NeuronServerFields,
    settings=NeuronTierSettings,
)
