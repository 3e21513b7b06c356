"""`accelbench ddl`: Athena DDL from the lake's schemas, parsed by sqlglot's Athena dialect, with
partition projection whose location template is the layout the lake really writes."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pyarrow as pa
import pytest
import sqlglot
from accelbench import cli
from accelbench.lake import athena
from accelbench.lake.schemas import PARTITIONS, SCHEMA_VERSION, TABLES
from accelbench.lake.store import Lake
from accelbench.tiers import names as tier_names
from sqlglot import exp

from tests.support.paths import REPO

URI = "s3://lake-bucket/accelbench"
DAY, TIER = "2026-11-30", "gpu"
# What Athena must read each Arrow type as, written out here rather than taken from the generator.
EXPECTED = {
    pa.int16(): exp.DataType.Type.SMALLINT,
    pa.int32(): exp.DataType.Type.INT,
    pa.int64(): exp.DataType.Type.BIGINT,
    pa.float64(): exp.DataType.Type.DOUBLE,
    pa.bool_(): exp.DataType.Type.BOOLEAN,
    pa.string(): exp.DataType.Type.TEXT,
    pa.timestamp("us", tz="UTC"): exp.DataType.Type.TIMESTAMP,
}
# Lists (the sketches table's values and bin counts): Athena's array of the element's type.
EXPECTED_LISTS = {
    pa.list_(pa.float64()): exp.DataType.Type.DOUBLE,
    pa.list_(pa.int64()): exp.DataType.Type.BIGINT,
}


def parse(ddl: str) -> list[exp.Create]:
    statements = sqlglot.parse(ddl, read="athena", error_level=sqlglot.ErrorLevel.RAISE)
    assert all(isinstance(s, exp.Create) for s in statements)
    return statements  # type: ignore[return-value]  # each one a Create: the assert above


def tables(ddl: str) -> dict[str, exp.Create]:
    return {s.this.this.name: s for s in parse(ddl) if s.kind == "TABLE"}


def properties(create: exp.Create) -> dict[str, str]:
    return {
        p.this.name: p.args["value"].name
        for p in create.args["properties"].expressions
        if type(p) is exp.Property
    }


def prop(create: exp.Create, kind: type[exp.Expression]) -> exp.Expression:
    (found,) = [p for p in create.args["properties"].expressions if isinstance(p, kind)]
    return found


def test_every_statement_parses_as_athena_and_every_column_appears_once_with_its_type() -> None:
    statements = parse(athena.ddl(URI, tier_names()))
    assert [s.kind for s in statements] == ["DATABASE"] + ["TABLE"] * len(TABLES)
    assert statements[0].this.name == "accelbench" and statements[0].args["exists"]
    created = tables(athena.ddl(URI, tier_names()))
    names = {"capacities", "costs", "quality", "requests", "runs", "sketches", "startups"}
    assert set(created) == set(TABLES) == names
    for name, schema in TABLES.items():
        create = created[name]
        assert create.this.this.db == "accelbench" and create.args["exists"]
        columns = create.this.expressions
        assert [c.name for c in columns] == schema.names  # each once, in the files' order
        for column, field in zip(columns, schema, strict=True):
            kind = column.args["kind"]
            if field.type in EXPECTED_LISTS:
                assert kind.this == exp.DataType.Type.ARRAY, field.name
                (element,) = kind.expressions
                assert element.this == EXPECTED_LISTS[field.type], field.name
            else:
                assert kind.this == EXPECTED[field.type], field.name
        assert isinstance(prop(create, exp.ExternalProperty), exp.ExternalProperty)
        assert prop(create, exp.FileFormatProperty).name == "PARQUET"
        assert prop(create, exp.LocationProperty).this.name == f"{URI}/{name}/"


def test_the_partitions_are_strings_and_date_is_quoted_everywhere() -> None:
    ddl = athena.ddl(URI, tier_names())
    for create in tables(ddl).values():
        parts = prop(create, exp.PartitionedByProperty).this.expressions
        assert [p.name for p in parts] == list(PARTITIONS) == ["accelerator_type", "date"]
        assert all(p.args["kind"].this == exp.DataType.Type.TEXT for p in parts)
        quoted = {p.name: p.this.quoted for p in parts}
        assert quoted == {"accelerator_type": False, "date": True}
        # Only Athena's DDL keywords are quoted; none of the schemas' own columns is one today.
        for column in create.this.expressions:
            assert column.this.quoted == (column.name.upper() in athena.DDL_RESERVED)
    assert re.search(r"(?<!`)\bdate\b(?!`)\s+string", ddl) is None  # never a bare `date` column


def test_a_reserved_column_name_would_be_quoted_too(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = pa.schema(
        [("timestamp", pa.timestamp("us", tz="UTC")), ("user", pa.string()), ("n", pa.int64())]
    )
    monkeypatch.setattr(athena, "TABLES", {"t": schema})
    create = tables(athena.create_table("t", URI, tier_names()))["t"]
    assert {c.name: c.this.quoted for c in create.this.expressions} == {
        "timestamp": True,
        "user": True,
        "n": False,
    }
    with pytest.raises(ValueError, match="no Athena type for Arrow type map"):
        athena.athena_type(pa.map_(pa.string(), pa.int32()))


def test_partition_projection_is_on_for_every_partition() -> None:
    for name, create in tables(athena.ddl(URI, tier_names())).items():
        props = properties(create)
        assert props["projection.enabled"] == "true"
        assert props["projection.accelerator_type.type"] == "enum"
        assert props["projection.accelerator_type.values"].split(",") == sorted(tier_names())
        assert props["projection.accelerator_type.values"] == "cpu,gpu,neuron"
        assert props["projection.date.type"] == "date"
        assert props["projection.date.format"] == "yyyy-MM-dd"
        first, last = props["projection.date.range"].split(",")
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", first) and first <= DAY and last == "NOW"
        assert (props["projection.date.interval"], props["projection.date.interval.unit"]) == ("1", "DAYS")
        assert {p for p in PARTITIONS if f"projection.{p}.type" in props} == set(PARTITIONS)
        template = props["storage.location.template"]
        assert re.findall(r"\$\{(\w+)\}", template) == list(PARTITIONS)
        assert template == f"{URI}/{name}/accelerator_type=${{accelerator_type}}/date=${{date}}/"


def _template(lake_uri: str, table: str) -> str:
    return properties(tables(athena.ddl(lake_uri, tier_names()))[table])["storage.location.template"]


def _filled(template: str, tier: str, day: str) -> str:
    return template.replace("${accelerator_type}", tier).replace("${date}", day)


def _one_row(table: str) -> pa.Table:
    return pa.Table.from_pylist(
        [{"run_id": "r1", "spec_id": "s1", "schema_version": SCHEMA_VERSION}], schema=TABLES[table]
    )


def test_the_location_template_is_where_a_local_lake_writes_its_files(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    for table in TABLES:
        written = lake.write_table(table, _one_row(table), TIER, DAY, "campaign_spec")
        assert Path(written).is_file()
        assert written == _filled(_template(lake.uri, table), TIER, DAY) + "campaign_spec.parquet"


def test_the_location_template_is_where_an_s3_lake_writes_its_objects(aws_on_moto) -> None:
    bucket = f"lake-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=bucket)
    lake = Lake(f"s3://{bucket}/accelbench")
    for table in TABLES:
        written = lake.uri_of(lake.write_table(table, _one_row(table), "neuron", DAY, "stem"))
        assert written == _filled(_template(lake.uri, table), "neuron", DAY) + "stem.parquet"
        key = written.removeprefix(f"s3://{bucket}/")
        listed = boto3.client("s3", region_name="us-east-1").list_objects_v2(Bucket=bucket, Prefix=key)
        assert [o["Key"] for o in listed["Contents"]] == [key]


def test_cli_prints_the_ddl_of_the_lake_given_or_configured(monkeypatch, capsys) -> None:
    assert cli.main(["ddl", "--lake", f"{URI}/"]) == 0
    out = capsys.readouterr().out
    assert out == athena.ddl(URI, tier_names()) and len(parse(out)) == 1 + len(TABLES)
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", "s3://configured-bucket/lake")
    assert cli.main(["ddl", "--database", "bench_db"]) == 0
    created = tables(capsys.readouterr().out)
    assert prop(created["runs"], exp.LocationProperty).this.name == "s3://configured-bucket/lake/runs/"
    assert {c.this.this.db for c in created.values()} == {"bench_db"}


def test_cli_refuses_a_local_lake_naming_the_setting(monkeypatch, capsys, tmp_path: Path) -> None:
    assert cli.main(["ddl"]) == 2  # the default lake is $ACCELBENCH_HOME/lake, a directory
    out, err = capsys.readouterr()
    assert out == "" and "ACCELBENCH_LAKE_URI=" in err and "only from s3://" in err
    monkeypatch.setenv("ACCELBENCH_LAKE_URI", str(tmp_path))
    assert cli.main(["ddl"]) == 2 and "ACCELBENCH_LAKE_URI=" in capsys.readouterr().err
    assert cli.main(["ddl", "--lake", str(tmp_path)]) == 2 and "--lake=" in capsys.readouterr().err
    assert cli.main(["ddl", "--lake", URI, "--database", "Bench-DB"]) == 2
    assert "--database='Bench-DB'" in capsys.readouterr().err


def test_the_command_line_runs_as_a_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "accelbench.cli", "ddl", "--lake", URI],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == athena.ddl(URI, tier_names())
