"""A tier is one registry entry: a toy tier, defined here and nowhere in the library, is registered for the
test, seeded into the catalog and its releases recorded by the real code, planned (its version pinned as
`versions.toy` or the catalog's newest), rendered as a benchmark pod and reported beside the CPU tier with no
library or DAG edit.

References: kubernetes-validate's strict schemas for the pod, the allocatable model for the node budget; the
report's figures are checked by hand against the toy price."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import kubernetes_validate
import pytest
from accelbench import tiers
from accelbench.campaign.plan import RuntimeBuild, plan_campaign
from accelbench.campaign.prepare import ModeChecks, prepare_campaign
from accelbench.campaign.request import CampaignRequest
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.queries import instance_catalog
from accelbench.catalog.seed import upsert_instance_types
from accelbench.catalog.seed_file import InstanceSpec, default_seed_path
from accelbench.config import Settings, TierSettings, env_name, reference_markdown, setting
from accelbench.core.price import Price
from accelbench.core.problems import PlanningError
from accelbench.core.server_group import ServerGroup
from accelbench.core.spec import BenchmarkSpec, LoadPlan, TierServerFields
from accelbench.k8s import placement
from accelbench.k8s.pod import PROBE_PERIOD_S, STARTUP_BASE_S, STARTUP_PER_GIB_S
from accelbench.lake import athena
from accelbench.lake.store import Lake
from accelbench.report.build import ReportFilter, build_report, write_report
from accelbench.runtime.recipes import Recipe
from accelbench.runtime.registry import Release, TagListing
from accelbench.sizing.daemonsets import DaemonSet
from accelbench.sizing.fit import GIB, Fit, NodeBudget
from accelbench.sizing.model_config import load_model_shape
from accelbench.tiers.base import Placement, Ranks, ServerRequest, Sizing, Startup, Taint, Tier
from kubernetes.client import ApiClient
from pydantic import Field

from tests.support.lake_rows import land_campaign
from tests.support.paths import REPO
from tests.support.planning import CATALOG, STORE

RESULT = json.loads((REPO / "tests" / "data" / "bench_results" / "vllm-bench-serve-c2.json").read_text())
JULY = datetime(2026, 7, 20, tzinfo=UTC)
CORES_PER_DEVICE = 4


@dataclass(frozen=True)
class VllmToy(Recipe):
    runtime: ClassVar[str] = "vllm-toy"
    default_version: ClassVar[str] = "0.1.0"

    def image(self, version: str, recorded: str | None = None) -> str:
        return f"registry.example.org/vllm-toy:v{version}"

    def tier_env(self, spec: Any) -> dict[str, str]:
        toy = Settings.from_env("toy_visible_cores").tier("toy")
        assert isinstance(toy, ToySettings)
        return {"TOY_VISIBLE_CORES": toy.toy_visible_cores}

    def release_source(self, settings: Settings) -> ToyReleases:
        return ToyReleases()


class ToySettings(TierSettings):
    """The toy tier's own group of settings, declared here and nowhere in the library."""

    title: ClassVar[str] = "Toy tier (vllm-toy)"
    toy_visible_cores: str = setting("all", group=title, description="the toy cores a toy server may use")


class ToyReleases:
    """The toy image repository's tags, as release discovery's clients list a registry's."""

    where = "registry.example.org/vllm-toy (this test)"

    def releases(self, include_prereleases: bool = False) -> TagListing:
        return TagListing(
            [
                Release(v, f"v{v}", f"registry.example.org/vllm-toy:v{v}", "sha256:" + c * 64, JULY)
                for v, c in (("0.1.0", "1"), ("0.2.0", "2"))
            ],
            {"latest": "not a version"},
        )


@dataclass(frozen=True)
class ToyTier(Tier):
    """Four cores per device, 80% of device memory for weights and the whole batch's KV cache."""

    def ranks(self, spec: InstanceSpec) -> Ranks:
        return Ranks(spec.accelerator_count * CORES_PER_DEVICE, "toy cores")

    def fit(self, sizing: Sizing) -> Fit:
        spec, shape = sizing.instance, sizing.shape
        weights = shape.weight_bytes() / GIB
        usable = 0.8 * spec.accelerator_memory_gib * spec.accelerator_count
        per_sequence = shape.kv_bytes_per_token() * sizing.request.context_len / GIB
        needed, room = per_sequence * sizing.concurrency, usable - weights
        return Fit(
            weights_gib=weights,
            activation_gib=0.0,
            overhead_gib=0.0,
            usable_gib=usable,
            kv_needed_gib=needed,
            kv_cache_gib=max(0, int(room)),
            max_full_context_sequences=int(room // per_sequence) if room > 0 else 0,
            fits=room >= needed,
            shortfall_gib=max(0.0, needed - room),
        )

    def refusal(self, fit: Fit, sizing: Sizing, catalog: Mapping[str, InstanceSpec]) -> str:
        return f"toy devices too small: {fit.describe()}, short by {fit.shortfall_gib:.2f} GiB"

    def server_fields(self, request: ServerRequest, load: LoadPlan) -> ToyServerFields:
        return ToyServerFields(max_num_seqs=load.max_concurrency)


class ToyServerFields(TierServerFields):
    """The toy tier's own server field, which no other tier has."""

    max_num_seqs: int = Field(ge=1)


TOY = ToyTier(
    name="toy",
    title="Toy accelerator (a test's own)",
    families=frozenset({"toy1"}),
    recipe=VllmToy(),
    placement=Placement(
        nodepool="accelbench-toy",
        architecture="amd64",
        taints=(Taint("example.org/toy", "true"), Taint("accelbench.io/dedicated", "true")),
        device_resource="example.org/toy",
        daemonsets=(DaemonSet("kube-system/toy-device-plugin", 50, 64, "this test"),),
    ),
    startup=Startup(compile_base_s=120, compile_per_gib_s=60),
    version_field=None,
    server_model=ToyServerFields,
    settings=ToySettings,
)


def test_the_toy_tier_brings_its_own_settings_group(toy: ToyTier, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env_name("toy_visible_cores") == "ACCELBENCH_TOY_VISIBLE_CORES"
    assert Settings.from_env().tier("toy") == ToySettings(toy_visible_cores="all")
    monkeypatch.setenv("ACCELBENCH_TOY_VISIBLE_CORES", "0-3")
    assert toy.recipe.env(plan("toy1.4xlarge")[0].server)["TOY_VISIBLE_CORES"] == "0-3"
    page = reference_markdown()
    assert "## Toy tier (vllm-toy)" in page and "| `ACCELBENCH_TOY_VISIBLE_CORES` |" in page
    assert page.index("## Neuron tier") < page.index("## Toy tier") < page.index("## Airflow")


def toy_type(name: str, devices: int, memory_gib: float) -> InstanceSpec:
    family, size = name.split(".")
    return InstanceSpec(
        instance_type=name,
        family=family,
        size=size,
        generation="toy-gen1",
        architecture="x86_64",
        vcpu=16,
        memory_gib=64,
        numa_nodes=1,
        max_pods=58,
        accelerator_type="toy",
        accelerator_name="Toy T1",
        accelerator_count=devices,
        accelerator_memory_gib=memory_gib,
    )


BIG, SMALL = toy_type("toy1.4xlarge", 2, 16.0), toy_type("toy1.nano", 1, 0.01)
TOY_CATALOG = {**CATALOG, BIG.instance_type: BIG, SMALL.instance_type: SMALL}
PRICES = [
    Price("toy1.4xlarge", "us-east-1", "on_demand", 2.5, JULY, "a test's price"),
    Price("m8g.xlarge", "us-east-1", "on_demand", 0.17952, JULY, "snapshot"),
]


@pytest.fixture
def toy() -> Iterator[ToyTier]:
    with tiers.registered(TOY) as registered:
        yield registered  # type: ignore[misc]
    assert "toy" not in tiers.names()


def plan(*types: str, **fields: Any) -> list[BenchmarkSpec]:
    req = CampaignRequest(instance_types=list(types), model="local/tiny-llama", dtype="bfloat16", **fields)
    planned = plan_campaign(
        req,
        TOY_CATALOG,
        "0.32.0",
        "toy-campaign",
        load_shape=lambda m: load_model_shape(m, STORE),
        builds={"vllm-toy": RuntimeBuild("0.1.0")},
    )
    return planned.specs


def test_the_toy_tier_is_named_by_no_library_file() -> None:
    library = REPO / "plugins" / "accelbench"
    named = [
        str(p.relative_to(REPO))
        for p in library.rglob("*")
        if p.is_file()
        and p.suffix in (".py", ".j2", ".csv", ".json", ".ini")
        and re.search(r"\btoy|vllm-toy|example\.org/toy", p.read_text(errors="replace"), re.I)
    ]
    assert named == []


def test_a_toy_row_passes_the_seed_check_and_the_ddl_projects_its_partition(toy: ToyTier) -> None:
    assert tiers.seed_problem(BIG) is None
    wrong = toy_type("g6.xlarge", 1, 16.0)
    problem = tiers.seed_problem(wrong)
    assert problem is not None and problem.field == "family" and "not a toy family" in problem.message
    ddl = athena.ddl("s3://lake/accelbench", tiers.names())
    assert "'projection.accelerator_type.values'='cpu,gpu,neuron,toy'" in ddl


def test_a_campaign_plans_a_toy_type_beside_a_cpu_type_through_its_tier(toy: ToyTier) -> None:
    toy_spec, cpu_spec = plan("toy1.4xlarge", "m8g.xlarge")
    s = toy_spec.server
    assert (s.accelerator_type, s.runtime, s.version) == ("toy", "vllm-toy", "0.1.0")
    assert s.image == "registry.example.org/vllm-toy:v0.1.0"
    assert s.tensor_parallel_size == 2 * CORES_PER_DEVICE  # every toy core of the type
    assert s.tier_fields == ToyServerFields(max_num_seqs=toy_spec.load.max_concurrency)
    # In JSON the toy field is flat, as every tier's, and comes back of the toy tier's type.
    assert json.loads(s.model_dump_json())["max_num_seqs"] == toy_spec.load.max_concurrency
    assert BenchmarkSpec.model_validate_json(toy_spec.model_dump_json()) == toy_spec
    assert s.dtype == "bfloat16" and s.kv_cache_gib == int(0.8 * 2 * 16 - s.model_weights_gib)
    # The node budget counts the toy tier's DaemonSet, as Karpenter adds it to the pod's requests.
    without = NodeBudget.for_instance(
        memory_gib=64,
        vcpu=16,
        architecture="x86_64",
        max_pods=58,
        loadgen_mib=toy.node_budget(BIG, 0).loadgen_mib,
    )
    assert without.server_memory_mib == toy.node_budget(BIG, 0).server_memory_mib + 64
    assert cpu_spec.server.accelerator_type == "cpu" and cpu_spec.server.runtime == "vllm-cpu"


def test_the_toy_tiers_own_rules_refuse_naming_the_field(toy: ToyTier) -> None:
    with pytest.raises(PlanningError) as err:
        plan("toy1.4xlarge", "toy1.nano", tensor_parallel_size=9)
    refused = sorted(
        p.message for p in err.value.problems if (p.field, p.value) == ("tensor_parallel_size", 9)
    )
    assert refused == [
        "greater than the 4 toy cores of toy1.nano",
        "greater than the 8 toy cores of toy1.4xlarge",
    ]
    with pytest.raises(PlanningError) as err:
        plan("toy1.nano")
    (problem,) = err.value.problems
    assert problem.field == "instance_types[0]" and "toy devices too small" in problem.message
    with pytest.raises(PlanningError, match="runtime vllm-toy needs a toy instance"):
        plan("m8g.xlarge", runtime="vllm-toy")


def test_the_toy_pod_lands_on_its_nodepool_with_its_device_and_validates_strictly(
    toy: ToyTier, kubeconfig: Path
) -> None:
    from accelbench.airflow.benchmark_pod import BenchmarkPod

    (spec,) = plan("toy1.4xlarge")
    op = BenchmarkPod(
        task_id="bench",
        group=ServerGroup(specs=(spec,)),
        config_file=str(kubeconfig),
        lake_uri="s3://lake/accelbench",
    )
    pod = ApiClient().sanitize_for_serialization(op.build_pod_request_obj())
    for version in ("1.33", "1.37"):
        kubernetes_validate.validate(pod, version, strict=True)
    selector = pod["spec"]["nodeSelector"]
    assert (
        selector[placement.NODEPOOL_LABEL] == "accelbench-toy" and selector[placement.ARCH_LABEL] == "amd64"
    )
    tolerations = {(t["key"], t["value"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert tolerations == {
        ("example.org/toy", "true", "NoSchedule"),
        ("accelbench.io/dedicated", "true", "NoSchedule"),
    }
    (server,) = [c for c in pod["spec"]["initContainers"] if c["name"] == "server"]
    assert server["image"] == "registry.example.org/vllm-toy:v0.1.0"
    assert server["resources"]["limits"]["example.org/toy"] == "2"
    assert server["resources"]["requests"] == server["resources"]["limits"]
    assert {"name": "TOY_VISIBLE_CORES", "value": "all"} in server["env"]
    assert server["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert server["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    weights = spec.server.model_weights_gib
    budget = STARTUP_BASE_S + STARTUP_PER_GIB_S * weights + 120 + 60 * weights
    assert server["startupProbe"]["failureThreshold"] == -(-budget // PROBE_PERIOD_S)


def test_a_toy_campaign_lands_and_is_reported_beside_the_cpu_tier(toy: ToyTier, tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    toy_spec, cpu_spec = plan("toy1.4xlarge", "m8g.xlarge", concurrency=[2], input_len=64, output_len=32)
    land_campaign(lake, cpu_spec, {2: RESULT})
    faster = {k: RESULT[k] * 4 for k in ("request_throughput", "output_throughput", "total_token_throughput")}
    land_campaign(lake, toy_spec, {2: RESULT | faster | {"duration": RESULT["duration"] / 4}})
    assert lake.fs.exists(lake.path("runs", "accelerator_type=toy"))

    runs = lake.read("runs").to_pylist()
    tables = build_report(runs, PRICES, [], ReportFilter())
    (point,) = [p for p in tables["points"] if p["accelerator_type"] == "toy"]
    assert point["instance_type"] == "toy1.4xlarge"
    assert point["on_demand_usd_per_1m_output_tokens"] == pytest.approx(
        2.5 / 3600 / (4 * RESULT["output_throughput"]) * 1e6
    )
    assert point["output_throughput_per_accelerator"] == pytest.approx(4 * RESULT["output_throughput"] / 2)
    group = [r for r in tables["cross_tier"] if r["comparison_id"] == point["comparison_id"]]
    assert sorted(r["accelerator_type"] for r in group) == ["cpu", "toy"]
    assert {r["tiers_compared"] for r in group} == {"cpu, toy"}
    only_toy = build_report(runs, PRICES, [], ReportFilter(tiers=["toy"]))
    assert {p["accelerator_type"] for p in only_toy["points"]} == {"toy"}

    written = write_report(lake, "20261203T000000Z", tables, ReportFilter(), len(runs))
    html = lake.fs.cat_file(written["report.html"]).decode()
    assert "toy1.4xlarge" in html and "cpu, toy" in html


SEED_HEADER = (
    "instance_type,family,size,generation,architecture,vcpu,memory_gib,numa_nodes,max_pods,accelerator_type,"
    "accelerator_name,accelerator_count,accelerator_memory_gib"
)
KUBERNETES = ModeChecks(local_vllm=lambda runtime: pytest.fail("not local"), kubernetes_problems=lambda m: [])


def test_the_toy_tier_is_seeded_its_releases_recorded_and_planned_from_the_catalog(
    toy: ToyTier, accelbench_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped seed file plus two toy rows, through the seed check and the catalog's upsert; the toy
    image's tags through release discovery's recording task; then the campaign's planning entry point picks
    the toy version from the catalog (the newest) or from the request's `versions`."""
    from accelbench.airflow.tasks.releases import record_releases

    monkeypatch.setenv("ACCELBENCH_MODEL_STORE", STORE)
    seed = tmp_path / "instance_types.csv"
    toy_rows = [
        "toy1.4xlarge,toy1,4xlarge,toy-gen1,x86_64,16,64,1,58,toy,Toy T1,2,16",
        "toy1.nano,toy1,nano,toy-gen1,x86_64,16,64,1,58,toy,Toy T1,1,0.01",
    ]
    seed.write_text(default_seed_path().read_text().rstrip("\n") + "\n" + "\n".join(toy_rows) + "\n")
    assert default_seed_path().read_text().splitlines()[0] == SEED_HEADER
    engine = make_engine(Settings.from_env().catalog.catalog_url)
    try:
        migrate(engine)
        upsert_instance_types(engine, tiers.load_seed(seed))
        catalog = instance_catalog(engine)
        assert catalog["toy1.4xlarge"] == BIG and catalog["toy1.nano"] == SMALL

        assert toy in tiers.recorded_only()  # release discovery has a task for it (record_toy_releases)
        recorded = record_releases(toy.runtime)
        assert recorded == {"runtime": "vllm-toy", "releases": 2, "new": ["0.1.0", "0.2.0"]}
        assert record_releases(toy.runtime)["new"] == []  # a known version is never recorded twice

        fields: dict[str, Any] = {
            "model": "local/tiny-llama",
            "concurrency": [2],
            "execution_mode": "kubernetes",
        }
        request = CampaignRequest(instance_types=["toy1.4xlarge", "m8g.xlarge"], **fields)
        toy_spec, cpu_spec = prepare_campaign(request, engine, "toy-catalog", KUBERNETES).specs
        assert (toy_spec.server.accelerator_type, toy_spec.server.version) == ("toy", "0.2.0")
        assert toy_spec.server.image == "registry.example.org/vllm-toy:v0.2.0"
        assert toy_spec.server.image_digest == "sha256:" + "2" * 64  # as discovery recorded it
        assert cpu_spec.server.accelerator_type == "cpu"

        pinned = CampaignRequest(instance_types=["toy1.4xlarge"], versions={"toy": "0.1.0"}, **fields)
        (spec,) = prepare_campaign(pinned, engine, "toy-pinned", KUBERNETES).specs
        assert (spec.server.version, spec.server.image_digest) == ("0.1.0", "sha256:" + "1" * 64)
    finally:
        engine.dispose()


def test_the_form_offers_versions_by_tier_and_older_fields_still_map_into_them(toy: ToyTier) -> None:
    """`versions` is keyed by registered tier (a tier a test registers included); the older per-tier fields
    that scheduled and backfill runs still send are accepted and mapped into it."""
    request = CampaignRequest(
        instance_types=["toy1.4xlarge"], model="m", versions={"toy": "0.1.0"}, version="0.19.1"
    )
    assert request.versions == {"toy": "0.1.0", "cpu": "0.19.1"} and request.version == "0.19.1"
    with pytest.raises(ValueError, match="expected one of cpu, gpu, neuron, toy"):
        CampaignRequest(instance_types=["toy1.4xlarge"], model="m", versions={"tpu": "1.0.0"})


def test_release_discovery_has_a_recording_task_for_the_toy_tier(toy: ToyTier, airflow_db) -> None:
    """The releases DAG maps over the registry's tiers that have a release source (but the announced CPU
    tier's): registered, the toy tier gets its own task, parsed from the unchanged DAG file."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "accelbench_vllm_cpu_releases.py"))
    assert bag.import_errors == {}
    tasks = set(bag.get_dag("accelbench_vllm_cpu_releases").task_ids)
    assert {"discover", "announce", "record_toy_releases"} <= tasks
