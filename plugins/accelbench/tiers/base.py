"""What a tier is: one object that holds everything tier-specific, so that adding a tier is one module.

A tier (the catalog's `accelerator_type`: cpu, gpu, neuron) says which instance families it carries, which
server recipe runs on them (image and arguments: accelbench.runtime.recipes), where its pods land (NodePool,
node architecture, taints, the device its plugin advertises, the DaemonSets on its nodes), how long its
server may take to start, how it is split into ranks, how a model fits its memory, what its servers may not
be asked, and how local mode finds and describes its devices. The planner, the pod, the node budget, host
facts, ingest, the DAGs' enums and the generated docs ask the registry (accelbench.tiers) instead of
branching on a tier's name. `Tier` gives every hook a default that suits a tier with nothing special; a
tier overrides what differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from accelbench.catalog.seed_file import InstanceSpec
from accelbench.config import TierSettings
from accelbench.core.problems import Problem
from accelbench.core.spec import LoadPlan, ServerSpec, TierServerFields
from accelbench.runtime.recipes import Recipe
from accelbench.sizing.daemonsets import DaemonSet
from accelbench.sizing.fit import Fit, NodeBudget
from accelbench.sizing.model_config import ModelShape


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Placement:
    """Where a tier's benchmark pods land: infra/ renders a NodePool from this and the pod selects it."""

    nodepool: str
    architecture: str  # kubernetes.io/arch of the NodePool's nodes
    taints: tuple[Taint, ...]
    device_resource: str | None = None  # the extended resource the tier's device plugin advertises
    # DaemonSets on this pool's nodes beyond the EKS add-ons every node runs (the device plugin): their
    # requests are not in allocatable, so the node budget subtracts them (accelbench.sizing.daemonsets).
    daemonsets: tuple[DaemonSet, ...] = ()


@dataclass(frozen=True)
class Startup:
    """What a server of this tier needs before /health answers, beyond process start and model load:
    compilation (CUDA graphs, neuronx-cc). Allowances, not measurements: the server's log gives the time."""

    compile_base_s: int = 0
    compile_per_gib_s: int = 0

    def compile_s(self, weights_gib: float) -> float:
        return self.compile_base_s + self.compile_per_gib_s * weights_gib


@dataclass(frozen=True)
class ServerSecurity:
    """The server container's Linux capabilities beyond none, and its seccomp profile."""

    add_capabilities: tuple[str, ...] = ()
    seccomp: str = "RuntimeDefault"


@dataclass(frozen=True)
class Ranks:
    """How many tensor-parallel ranks an instance type offers, in the tier's own unit."""

    limit: int
    unit: str  # "NUMA node(s)", "GPUs", "NeuronCores": said in a refusal
    note: str = ""  # appended to a refusal that asks for more


@dataclass(frozen=True)
class LocalBuild:
    """How local mode serves a tier: the vLLM environment (the field of the tier's settings group that names
    its interpreter, default folder beside the repository, and the script that makes it)."""

    setting: str
    folder: str
    installer: str


class ServerRequest(Protocol):
    """The request fields a tier reads (accelbench.campaign.request.CampaignRequest has them all)."""

    @property
    def model(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def quantization(self) -> str: ...
    @property
    def kv_cache_dtype(self) -> str: ...
    @property
    def extra_engine_args(self) -> Sequence[str]: ...
    @property
    def tensor_parallel_size(self) -> int | None: ...
    @property
    def context_len(self) -> int: ...


@dataclass(frozen=True)
class Sizing:
    """What a tier's fit needs: the model, one instance type and its node budget, the ranks, the load."""

    request: ServerRequest
    shape: ModelShape
    instance: InstanceSpec
    budget: NodeBudget
    ranks: int
    load: LoadPlan
    concurrency: int  # the requests in flight the server is sized for (Tier.concurrency)


@dataclass(frozen=True)
class Tier:
    """One tier. Data fields are facts; methods are rules with the default of a plain tier."""

    name: str  # the catalog's accelerator_type and the lake's partition
    title: str  # how pages name it
    families: frozenset[str]  # the instance families the catalog may carry for it
    recipe: Recipe  # the server: image, arguments, environment (accelbench.runtime.recipes)
    placement: Placement
    startup: Startup = Startup()
    security: ServerSecurity = ServerSecurity()
    local: LocalBuild | None = None  # None: local mode cannot serve it
    # A request pins this tier's runtime version as `versions[name]` (unset: the catalog's newest at the run's
    # date). `version_field`: the request's older field for it (`version`, ...), still accepted and mapped
    # into `versions` (old DAG-run confs, scheduled and backfill runs); None: the tier never had one.
    version_field: str | None = None
    forced_dtype: str | None = None  # the dtype every server of the tier runs, whatever the request says
    # Seed-file rows of this tier must name their accelerator, its count and memory per device.
    accelerated: bool = True
    # Why a multi-node deployment is refused, in this tier's terms (None: the generic reason).
    single_node_reason: str | None = None
    # The fields only this tier's servers have (ServerSpec.tier_fields; `server_fields` fills them).
    server_model: type[TierServerFields] = TierServerFields
    # The tier's own settings group (its image repository, its local environment): `settings.tier(name)`,
    # listed on the configuration page. None: the tier reads no setting.
    settings: type[TierSettings] | None = None

    @property
    def runtime(self) -> str:
        return self.recipe.runtime

    # --- the catalog -------------------------------------------------------------------------------
    def seed_problem(self, spec: InstanceSpec) -> Problem | None:
        """What is wrong with a seed-file row of this tier (its field relative to the row); None: nothing."""
        if spec.family not in self.families:
            why = f"not a {self.name} family this suite benchmarks ({', '.join(sorted(self.families))})"
            return Problem("family", spec.family, why)
        accelerator = (spec.accelerator_name, spec.accelerator_count, spec.accelerator_memory_gib)
        if self.accelerated and not (
            spec.accelerator_name and spec.accelerator_count > 0 and spec.accelerator_memory_gib > 0
        ):
            why = "an accelerated type needs its accelerator's name, count and memory per accelerator"
            return Problem("accelerator_*", accelerator, why)
        if not self.accelerated and (
            spec.accelerator_name or spec.accelerator_count != 0 or spec.accelerator_memory_gib != 0
        ):
            why = f"a {self.name} type has no accelerator: no name, count 0 and memory 0"
            return Problem("accelerator_*", accelerator, why)
        return None

    def cores_per_device(self, spec: InstanceSpec) -> int | None:
        """Ranks per device that EC2 also reports (CoreInfo.Count), checked by catalog verification."""
        return None

    # --- planning ----------------------------------------------------------------------------------
    def instance_problem(self, spec: InstanceSpec) -> str | None:
        """Why a catalog row of this tier cannot be planned against at all."""
        if self.accelerated and spec.accelerator_memory_gib <= 0:
            return "the catalog row gives no accelerator memory to plan against"
        return None

    def request_problems(self, request: ServerRequest, instance_types: Sequence[str]) -> list[Problem]:
        """Fields of the request this tier's servers cannot honour (`instance_types`: the campaign's types
        of this tier, named in a mixed campaign)."""
        return []

    def model_problems(self, request: ServerRequest, shape: ModelShape, warnings: list[str]) -> list[Problem]:
        """What this tier refuses of the model (formats, sizes); warnings it appends."""
        return []

    def load_problems(self, load: LoadPlan) -> list[Problem]:
        """What this tier refuses of the load plan."""
        return []

    def ranks(self, spec: InstanceSpec) -> Ranks:
        """One rank per device by default."""
        return Ranks(spec.accelerator_count, "devices")

    def tensor_parallel(
        self, request: ServerRequest, spec: InstanceSpec, shape: ModelShape | None, warnings: list[str]
    ) -> tuple[int, list[Problem]]:
        """The ranks a server of this type runs: the request's, else every rank the type offers."""
        ranks = self.ranks(spec)
        tp = request.tensor_parallel_size or ranks.limit
        if tp > ranks.limit:
            why = f"greater than the {ranks.limit} {ranks.unit} of {spec.instance_type}{ranks.note}"
            return tp, [Problem("tensor_parallel_size", tp, why)]
        return tp, []

    def concurrency(self, load: LoadPlan) -> int:
        """The requests in flight a server is sized for."""
        return load.max_concurrency

    def node_budget(self, spec: InstanceSpec, loadgen_mib: int) -> NodeBudget:
        """What the server container gets on a Karpenter node of this type, beside this tier's DaemonSets."""
        if spec.max_pods is None:
            raise ValueError(f"{spec.instance_type}: the catalog row has no max_pods")
        return NodeBudget.for_instance(
            memory_gib=spec.memory_gib,
            vcpu=spec.vcpu,
            architecture=spec.architecture,
            max_pods=spec.max_pods,
            loadgen_mib=loadgen_mib,
            daemonsets=self.placement.daemonsets,
        )

    def fit(self, sizing: Sizing) -> Fit:
        """How the model fits a server of this tier (every tier defines its own)."""
        raise NotImplementedError(f"the {self.name} tier has no memory fit")

    def refusal(self, fit: Fit, sizing: Sizing, catalog: Mapping[str, InstanceSpec]) -> str:
        """Why the model does not fit, and what to change."""
        return f"{sizing.request.model} does not fit: {fit.describe()}: short by {fit.shortfall_gib:.2f} GiB"

    def dtype(self, request: ServerRequest) -> str:
        return self.forced_dtype or request.dtype

    def server_fields(self, request: ServerRequest, load: LoadPlan) -> TierServerFields:
        """The ServerSpec fields only this tier sets (e.g. the GPU memory share, the Neuron batch), of its
        `server_model`."""
        return self.server_model()

    # --- running -----------------------------------------------------------------------------------
    def devices_here(self) -> str | None:
        """This host's devices of the tier, as a local row records them (host_accelerators); None: none
        or the tier has no device (CPU)."""
        return None

    def local_problem(self) -> str | None:
        """Why this worker cannot serve the tier locally, once its environment exists (e.g. no GPU)."""
        return None

    def local_spec_problem(self, spec: ServerSpec) -> tuple[str, object, str] | None:
        """(field, value, why) when this worker cannot run `spec` locally (too few devices)."""
        return None
