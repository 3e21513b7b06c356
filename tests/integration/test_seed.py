"""The shipped seed file and the idempotent upsert of the instance catalog."""

from __future__ import annotations

import csv
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from accelbench.aws.offline import load_snapshot
from accelbench.catalog.queries import instance_specs
from accelbench.catalog.seed import upsert_instance_types
from accelbench.catalog.seed_file import default_seed_path, load_seed
from accelbench.errors import ConfigError, UnknownInstanceType, UnsupportedInstanceType

SPECS = load_seed()
BY_NAME = {s.instance_type: s for s in SPECS}


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


def test_gpu_and_neuron_types_for_cross_tier_reports() -> None:
    assert BY_NAME["g6e.xlarge"].accelerator_name == "NVIDIA L40S"
    assert BY_NAME["p5.48xlarge"].accelerator_count == 8
    assert BY_NAME["p5.48xlarge"].accelerator_memory_gib == 80
    assert BY_NAME["inf2.48xlarge"].accelerator_type == "neuron"
    assert BY_NAME["inf2.48xlarge"].accelerator_count == 12
    families = {s.family for s in SPECS if s.accelerator_type != "cpu"}
    assert families == {"g6e", "p5", "inf2"}


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
