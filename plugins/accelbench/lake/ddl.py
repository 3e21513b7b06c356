"""Athena / Glue `CREATE EXTERNAL TABLE` statements for the lake, generated from the schemas."""

from __future__ import annotations

import pyarrow as pa

from accelbench.lake.schemas import PARTITIONS, TABLES


def hive_type(t: pa.DataType) -> str:
    if pa.types.is_timestamp(t):
        return "timestamp"
    return {
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.string(): "string",
    }[t]


def create_table(name: str, location: str, database: str = "accelbench") -> str:
    cols = ",\n".join(f"  `{f.name}` {hive_type(f.type)}" for f in TABLES[name])
    parts = ", ".join(f"`{p}` string" for p in PARTITIONS)
    return (
        f"CREATE EXTERNAL TABLE IF NOT EXISTS `{database}`.`{name}` (\n{cols}\n)\n"
        f"PARTITIONED BY ({parts})\nSTORED AS PARQUET\nLOCATION '{location.rstrip('/')}/{name}/'\n"
        "TBLPROPERTIES ('parquet.compression'='ZSTD');"
    )


def all_ddl(lake_uri: str, database: str = "accelbench") -> str:
    """Run these, then `MSCK REPAIR TABLE` (or partition projection) to pick up new partitions."""
    return "\n\n".join(create_table(name, lake_uri, database) for name in TABLES)
