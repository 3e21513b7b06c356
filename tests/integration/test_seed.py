"""The shipped seed file and the idempotent upsert of the instance catalog."""

from __future__ import annotations

import csv
import logging
import re
from dataclasses import replace
from pathlib import Path

import pytest
from accelbench.aws.offline import load_snapshot
from accelbench.catalog.queries import instance_specs
from accelbench.catalog.seed import upsert_instance_types
from accelbench.catalog.seed_file import default_seed_path
from accelbench.errors import ConfigError, UnknownInstanceType, UnsupportedInstanceType
from accelbench.tiers import GPU, NEURON, load_seed

from tests.support.paths import REPO
from tests.support.servers import missing

SPECS = load_seed()
BY_NAME = {s.instance_type: s for s in SPECS}
PLANNED = GPU.families | NEURON.families


def test_seed_has_every_graviton_size_of_the_snapshot_and_nothing_else_on_cpu() -> None:
    cpu = {s.instance_type for s in SPECS if s.accelerator_type == "cpu"}
    assert cpu == set(load_snapshot().prices)
    assert {s.family for s in SPECS if s.accelerator_type == "cpu"} == {
        "r7g",
        "m7g",
        "c7g",
        "r8g",
        "m8g",
        "c8g",
        "m9g",
        "c9g",
    }


def test_graviton_facts() -> None:
    assert BY_NAME["r8g.16xlarge"].memory_gib == 8 * 64  # r8g = 8 GiB per vCPU
    assert BY_NAME["m8g.4xlarge"].memory_gib == 4 * 16
    assert BY_NAME["c8g.48xlarge"].vcpu == 192
    assert {s.generation for s in SPECS if s.family.endswith("7g")} == {"graviton3"}
    assert {s.architecture for s in SPECS if s.accelerator_type == "cpu"} == {"arm64"}
    two = {s.instance_type for s in SPECS if s.numa_nodes == 2 and s.accelerator_type == "cpu"}
    expected = {f"{f}.{size}" for f in ("r8g", "m8g", "c8g") for size in ("48xlarge", "metal-48xl")}
    expected |= {f"{f}.{size}" for f in ("m9g", "c9g") for size in ("16xlarge", "48xlarge", "metal-48xl")}
    assert two == expected
    assert all(
        s.accelerator_count == 0 and s.accelerator_memory_gib == 0
        for s in SPECS
        if s.accelerator_type == "cpu"
    )


def _karpenter_reference() -> dict[str, dict[str, str]]:
    """Karpenter's published per-type table (shared/reference/karpenter-allocatable-al2023.csv)."""
    reference = REPO.parent / "shared" / "reference" / "karpenter-allocatable-al2023.csv"
    if not reference.is_file():
        missing(f"Karpenter's allocatable table {reference} (shared/ beside the repository)")
    with reference.open(newline="") as fh:
        return {row["instance_type"]: row for row in csv.DictReader(fh)}


def test_every_gpu_and_neuron_size_of_the_reference_is_in_the_catalog_with_its_device_count() -> None:
    # The reference also lists p5e/p5en, which the suite does not plan (no NUMA source for them).
    reference = {n: r for n, r in _karpenter_reference().items() if n.split(".")[0] in PLANNED}
    gpu = {n for n, r in reference.items() if r["gpu_count"]}
    neuron = {n for n, r in reference.items() if r["neuron_count"]}
    assert {s.family for s in SPECS if s.instance_type in gpu} == GPU.families
    assert {s.family for s in SPECS if s.instance_type in neuron} == NEURON.families
    assert {s.instance_type for s in SPECS if s.accelerator_type == "gpu"} == gpu
    assert {s.instance_type for s in SPECS if s.accelerator_type == "neuron"} == neuron
    for name in gpu | neuron:
        row = reference[name]
        assert BY_NAME[name].accelerator_count == int(row["gpu_count"] or row["neuron_count"]), name
        assert BY_NAME[name].architecture == "x86_64" and row["arch"] == "amd64", name


def test_gpu_and_neuron_facts_as_ec2_reports_them() -> None:
    # Per-accelerator memory is EC2's MemoryInfo.SizeInMiB / 1024 (Karpenter's instance-gpu-memory label).
    assert BY_NAME["g5.48xlarge"].accelerator_memory_gib == 22888 / 1024
    assert BY_NAME["g6.12xlarge"].accelerator_memory_gib == 22888 / 1024
    assert BY_NAME["g6e.xlarge"].accelerator_memory_gib == 45776 / 1024
    assert BY_NAME["p5.48xlarge"].accelerator_memory_gib == 81920 / 1024
    assert BY_NAME["trn1.32xlarge"].accelerator_memory_gib == 32768 / 1024
    assert {BY_NAME[n].accelerator_name for n in ("g5.xlarge", "g6.xlarge", "trn1.2xlarge")} == {
        "NVIDIA A10G",
        "NVIDIA L4",
        "AWS Trainium",
    }
    assert BY_NAME["inf2.48xlarge"].accelerator_type == "neuron"
    two = {s.instance_type for s in SPECS if s.numa_nodes == 2 and s.accelerator_type != "cpu"}
    assert two == {f"{f}.48xlarge" for f in ("g5", "g6", "g6e", "p5", "inf2")} | {"trn1.32xlarge"}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"instance_type": "g4dn.xlarge", "family": "g4dn"}, "not a gpu family this suite benchmarks"),
        ({"accelerator_type": "neuron"}, "not a neuron family this suite benchmarks"),
        ({"accelerator_name": ""}, "needs its accelerator's name, count and memory"),
        ({"accelerator_memory_gib": "0"}, "needs its accelerator's name, count and memory"),
    ],
)
def test_an_accelerated_row_of_an_unplanned_family_or_without_its_accelerator_is_refused(
    tmp_path: Path, change: dict[str, str], error: str
) -> None:
    def mutate(rows):
        g6 = next(r for r in rows if r["instance_type"] == "g6.xlarge")
        return [r for r in rows if r is not g6] + [g6 | change]

    with pytest.raises(ConfigError, match=re.escape(error)):
        load_seed(_write_seed(tmp_path / "seed.csv", mutate))


def _write_seed(path: Path, mutate) -> Path:
    rows = list(csv.DictReader(default_seed_path().open()))
    rows = mutate(rows)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_graviton2_is_refused_with_the_reason(tmp_path: Path) -> None:
    def add_m6g(rows):
        return [*rows, rows[0] | {"instance_type": "m6g.large", "family": "m6g", "size": "large"}]

    with pytest.raises(UnsupportedInstanceType) as err:
        load_seed(_write_seed(tmp_path / "seed.csv", add_m6g))
    assert "m6g.large" in str(err.value) and "FEAT_BF16" in str(err.value)


def test_r9g_is_accepted_when_it_appears(tmp_path: Path) -> None:
    def add_r9g(rows):
        return [
            *rows,
            rows[0]
            | {"instance_type": "r9g.large", "family": "r9g", "size": "large", "generation": "graviton5"},
        ]

    specs = load_seed(_write_seed(tmp_path / "seed.csv", add_r9g))
    assert "r9g.large" in {s.instance_type for s in specs}


def test_bad_seed_values_name_the_row_and_field(tmp_path: Path) -> None:
    def bad_vcpu(rows):
        rows[3]["vcpu"] = "four"
        return rows

    with pytest.raises(ConfigError) as err:
        load_seed(_write_seed(tmp_path / "seed.csv", bad_vcpu))
    assert "seed.csv:5.vcpu" in str(err.value) and "'four'" in str(err.value)
    with pytest.raises(ConfigError, match="seed_file"):
        load_seed(tmp_path / "missing.csv")


def test_upsert_twice_changes_nothing(engine) -> None:
    first = upsert_instance_types(engine, SPECS)
    assert len(first.inserted) == len(SPECS) and not first.updated
    second = upsert_instance_types(engine, SPECS)
    assert second.inserted == [] and second.updated == {} and second.unchanged == len(SPECS)
    assert instance_specs(engine) == sorted(SPECS, key=lambda s: s.instance_type)


def test_changed_spec_updates_the_row_and_logs_it(engine, caplog) -> None:
    upsert_instance_types(engine, SPECS)
    changed = [replace(s, numa_nodes=2) if s.instance_type == "r8g.24xlarge" else s for s in SPECS]
    with caplog.at_level(logging.INFO, logger="accelbench.catalog.seed"):
        result = upsert_instance_types(engine, changed)
    assert result.updated == {"r8g.24xlarge": {"numa_nodes": (1, 2)}}
    assert "r8g.24xlarge: numa_nodes changed 1 -> 2" in caplog.text
    assert instance_specs(engine, ["r8g.24xlarge"])[0].numa_nodes == 2


def test_unknown_instance_type_is_named(engine) -> None:
    upsert_instance_types(engine, SPECS)
    with pytest.raises(UnknownInstanceType) as err:
        instance_specs(engine, ["r8g.large", "r8g.gigantic"])
    assert "r8g.gigantic" in str(err.value) and "instance_types" in str(err.value)
