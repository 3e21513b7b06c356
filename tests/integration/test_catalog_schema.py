"""The catalog schema enforces its rules in the database, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from accelbench.catalog.db import make_engine, migrate
from accelbench.catalog.models import Base
from accelbench.errors import CatalogUnavailable, ConfigError
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

NOW = datetime(2026, 11, 30, tzinfo=UTC)
CPU_ROW = {
    "instance_type": "r8g.large",
    "family": "r8g",
    "size": "large",
    "generation": "graviton4",
    "architecture": "arm64",
    "vcpu": 2,
    "memory_gib": 16.0,
    "numa_nodes": 1,
    "max_pods": 29,
    "accelerator_type": "cpu",
    "accelerator_name": None,
    "accelerator_count": 0,
    "accelerator_memory_gib": 0.0,
    "source": "test",
    "created_at": NOW,
    "updated_at": NOW,
}
PRICE_ROW = {
    "instance_type": "r8g.large",
    "region": "us-east-1",
    "pricing_model": "on_demand",
    "usd_per_hour": 0.11782,
    "effective_at": NOW,
    "fetched_at": NOW,
    "source": "test",
}


def _insert(engine, table: str, row: dict) -> None:
    cols = ", ".join(row)
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO {table} ({cols}) VALUES ({', '.join(':' + c for c in row)})"), row)


def test_migrations_create_every_table_and_match_the_models(engine) -> None:
    tables = set(inspect(engine).get_table_names())
    expected = {
        "instance_types",
        "instance_prices",
        "runtime_versions",
        "retractions",
        "regression_decisions",
    }
    assert expected <= tables
    with engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diffs == []


def test_migrate_is_idempotent(engine) -> None:
    assert migrate(engine) == migrate(engine) == "0006"


@pytest.mark.parametrize(
    ("change", "constraint"),
    [
        ({"accelerator_count": 1}, "accelerator_all_or_none"),
        ({"accelerator_memory_gib": 16.0}, "accelerator_all_or_none"),
        ({"accelerator_type": "gpu", "accelerator_count": 1}, "accelerator_all_or_none"),
        ({"accelerator_type": "gpu", "accelerator_count": -1}, "accelerat"),
        ({"vcpu": 0}, "vcpu_positive"),
        ({"architecture": "i386"}, "architecture"),
        ({"max_pods": 0}, "max_pods_positive"),
    ],
)
def test_instance_type_constraints_live_in_the_schema(engine, change, constraint) -> None:
    with pytest.raises(IntegrityError) as err:
        _insert(engine, "instance_types", CPU_ROW | change)
    assert f"ck_instance_types_{constraint}" in str(err.value)


def test_a_tier_is_the_registrys_not_a_list_in_the_schema(engine, tmp_path) -> None:
    """Revision 0004 dropped the CHECK that listed the tiers: a new tier is one registry entry, and the seed
    file's rows are checked against the registry before anything is written."""
    from accelbench.errors import ConfigError
    from accelbench.tiers import load_seed

    _insert(engine, "instance_types", CPU_ROW | {"instance_type": "x1.large", "family": "x1"})
    _insert(
        engine,
        "instance_types",
        CPU_ROW
        | {
            "accelerator_type": "tpu",
            "accelerator_count": 1,
            "accelerator_memory_gib": 16.0,
            "instance_type": "t9.large",
            "family": "t9",
        },
    )
    seed = tmp_path / "seed.csv"
    header = "instance_type,family,size,generation,architecture,vcpu,memory_gib,numa_nodes,max_pods,"
    header += "accelerator_type,accelerator_name,accelerator_count,accelerator_memory_gib"
    seed.write_text(f"{header}\nt9.large,t9,large,tpu-v9,x86_64,2,8,1,29,tpu,TPU,1,16\n")
    with pytest.raises(ConfigError, match=r"seed.csv:2.accelerator_type='tpu': expected one of cpu, gpu"):
        load_seed(seed)


def test_price_constraints_live_in_the_schema(engine) -> None:
    _insert(engine, "instance_types", CPU_ROW)
    for bad in (0, -0.5):
        with pytest.raises(IntegrityError):
            _insert(engine, "instance_prices", PRICE_ROW | {"usd_per_hour": bad})
    with pytest.raises(IntegrityError):
        _insert(engine, "instance_prices", PRICE_ROW | {"pricing_model": "reserved"})
    with pytest.raises(IntegrityError):  # foreign key: no price for a type the catalog lacks
        _insert(engine, "instance_prices", PRICE_ROW | {"instance_type": "r8g.huge"})
    _insert(engine, "instance_prices", PRICE_ROW)
    with pytest.raises(IntegrityError):
        _insert(engine, "instance_prices", PRICE_ROW | {"usd_per_hour": 0.2})
    _insert(engine, "instance_prices", PRICE_ROW | {"pricing_model": "spot", "usd_per_hour": 0.05})


def test_gpu_row_with_accelerators_is_accepted(engine) -> None:
    gpu = CPU_ROW | {
        "instance_type": "g6e.xlarge",
        "family": "g6e",
        "size": "xlarge",
        "architecture": "x86_64",
        "accelerator_type": "gpu",
        "accelerator_name": "NVIDIA L40S",
        "accelerator_count": 1,
        "accelerator_memory_gib": 44.703125,
    }
    _insert(engine, "instance_types", gpu)
    with pytest.raises(IntegrityError):  # an accelerated row needs accelerators
        _insert(engine, "instance_types", gpu | {"instance_type": "g6e.2xlarge", "accelerator_count": 0})


def test_unreachable_catalog_names_the_database_and_hides_the_password(pg_server) -> None:
    from tests.support.servers import free_port

    url = f"postgresql://someone:s3cret@127.0.0.1:{free_port()}/catalog"
    with pytest.raises(CatalogUnavailable) as err:
        make_engine(url)
    msg = str(err.value)
    assert "127.0.0.1" in msg and "catalog" in msg and "unreachable" in msg
    assert "s3cret" not in msg


def test_malformed_catalog_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as err:
        make_engine("not a url")
    assert "catalog_url" in str(err.value)


def test_sqlite_catalog_lives_under_the_configured_home(accelbench_env) -> None:
    from accelbench.config import Settings

    settings = Settings.from_env()
    assert settings.catalog.catalog_url == f"sqlite:///{accelbench_env / 'catalog.db'}"
    engine = make_engine(settings.catalog.catalog_url)
    migrate(engine)
    engine.dispose()
    assert (accelbench_env / "catalog.db").is_file()


def test_revision_0002_keeps_runtime_versions_and_allows_announced(catalog_url: str) -> None:
    from accelbench.catalog.db import alembic_config
    from alembic import command

    engine = make_engine(catalog_url)
    command.upgrade(alembic_config(engine), "0001")
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO runtime_versions (runtime, version, image, digest, discovered_at, status) "
                "VALUES ('vllm-cpu', '0.19.0', 'img', 'sha256:x', '2026-11-01 00:00:00+00:00', 'discovered')"
            )
        )
        with pytest.raises(IntegrityError), conn.begin_nested():
            conn.execute(text("UPDATE runtime_versions SET status = 'announced'"))
    assert migrate(engine) == "0006"
    with engine.begin() as conn:
        conn.execute(text("UPDATE runtime_versions SET status = 'announced'"))
        assert conn.execute(text("SELECT version, digest, status FROM runtime_versions")).one() == (
            "0.19.0",
            "sha256:x",
            "announced",
        )
        with pytest.raises(IntegrityError), conn.begin_nested():
            conn.execute(text("UPDATE runtime_versions SET status = 'bogus'"))
    engine.dispose()


def test_revision_0003_keeps_instance_rows_with_max_pods_unknown(catalog_url: str) -> None:
    """Rows seeded before max_pods existed survive the upgrade with NULL (the planner then refuses them)."""
    from accelbench.catalog.db import alembic_config
    from alembic import command

    engine = make_engine(catalog_url)
    command.upgrade(alembic_config(engine), "0002")
    _insert(engine, "instance_types", {k: v for k, v in CPU_ROW.items() if k != "max_pods"})
    assert migrate(engine) == "0006"
    with engine.begin() as conn:
        assert conn.execute(text("SELECT instance_type, vcpu, max_pods FROM instance_types")).one() == (
            CPU_ROW["instance_type"],
            CPU_ROW["vcpu"],
            None,
        )
        with pytest.raises(IntegrityError), conn.begin_nested():
            conn.execute(text("UPDATE instance_types SET max_pods = -1"))
        conn.execute(text("UPDATE instance_types SET max_pods = 58"))
    engine.dispose()


def _checks(engine) -> set[str]:
    return {str(c["name"]) for c in inspect(engine).get_check_constraints("instance_types")}


def test_revision_0006_makes_the_accelerator_constraint_tier_free_and_downgrades(catalog_url: str) -> None:
    """The catalog names no tier: accelerators all or none, on any tier; the downgrade restores the two
    constraints that named 'cpu'. The rows already there are kept both ways."""
    from accelbench.catalog.db import alembic_config
    from alembic import command

    engine = make_engine(catalog_url)
    config = alembic_config(engine)
    command.upgrade(config, "0005")
    old = {"ck_instance_types_cpu_has_no_accelerator", "ck_instance_types_accelerated_has_count"}
    assert old <= _checks(engine)
    gpu = CPU_ROW | {"instance_type": "g6e.xlarge", "accelerator_type": "gpu", "accelerator_count": 1}
    _insert(engine, "instance_types", CPU_ROW)
    _insert(engine, "instance_types", gpu | {"accelerator_memory_gib": 44.703125})
    assert migrate(engine) == "0006"
    assert "ck_instance_types_accelerator_all_or_none" in _checks(engine) and not old & _checks(engine)
    # A tier unknown to the catalog, without accelerators: the schema lets it be (the registry judges).
    _insert(engine, "instance_types", CPU_ROW | {"instance_type": "x1.large", "accelerator_type": "plain"})
    with pytest.raises(IntegrityError, match="accelerator_all_or_none"):  # accelerators without memory
        _insert(engine, "instance_types", gpu | {"instance_type": "g6e.2xlarge"})

    with (
        engine.begin() as conn
    ):  # a row the old constraints refuse (an unaccelerated tier but CPU) cannot stay
        conn.execute(text("DELETE FROM instance_types WHERE instance_type = 'x1.large'"))
    command.downgrade(config, "0005")
    assert old <= _checks(engine) and "ck_instance_types_accelerator_all_or_none" not in _checks(engine)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM instance_types")).scalar_one() == 2
    with pytest.raises(IntegrityError, match="cpu_has_no_accelerator"):
        _insert(engine, "instance_types", CPU_ROW | {"instance_type": "r8g.xlarge", "accelerator_count": 1})
    engine.dispose()


def test_the_seed_check_refuses_a_row_against_its_tiers_rule(tmp_path) -> None:
    """What the schema no longer says per tier the registry does, before anything is written: a CPU type
    names no accelerator (not even its name, which no constraint sees) and a GPU type names its own."""
    from accelbench.tiers import load_seed

    seed = tmp_path / "seed.csv"
    header = "instance_type,family,size,generation,architecture,vcpu,memory_gib,numa_nodes,max_pods,"
    header += "accelerator_type,accelerator_name,accelerator_count,accelerator_memory_gib"
    rows = {
        "r8g.large,r8g,large,graviton4,arm64,2,16,1,29,cpu,Some NPU,0,0": "a cpu type has no accelerator",
        "r8g.large,r8g,large,graviton4,arm64,2,16,1,29,cpu,,1,16": "a cpu type has no accelerator",
        "g6e.xlarge,g6e,xlarge,l40s,x86_64,4,32,1,58,gpu,,0,0": "an accelerated type needs its accelerator",
    }
    for row, why in rows.items():
        seed.write_text(f"{header}\n{row}\n")
        with pytest.raises(ConfigError, match=rf"seed.csv:2.accelerator_\*=.*{why}"):
            load_seed(seed)
    seed.write_text(f"{header}\nr8g.large,r8g,large,graviton4,arm64,2,16,1,29,cpu,,0,0\n")
    assert [s.instance_type for s in load_seed(seed)] == ["r8g.large"]
