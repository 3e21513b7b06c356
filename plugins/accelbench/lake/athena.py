"""Athena DDL for the lake, generated from its pyarrow schemas (`accelbench ddl` prints it).

The tables use partition projection: Athena computes the `accelerator_type=<tier>/date=<day>/`
folders from the table properties instead of reading them from the Glue catalog, so a partition
a campaign has just written is queryable at once, with no `MSCK REPAIR TABLE` or
`ALTER TABLE ADD PARTITION`. The folder layout is the one `Lake.table_path` writes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa

from accelbench.config import LAKE_SETTING
from accelbench.errors import ConfigError
from accelbench.lake.schemas import PARTITIONS, TABLES

DEFAULT_DATABASE = "accelbench"
# Earliest `date` partition Athena projects. Imported results are filed under the day they ran,
# which can predate the suite; a partition before this day is invisible to Athena (not an error).
FIRST_DATE = "2024-01-01"
DATE_FORMAT = "yyyy-MM-dd"  # Java date format of the `date=` folders (Lake writes ISO days)

# Athena's reserved keywords in DDL statements, which must be backtick-quoted as identifiers
# (https://docs.aws.amazon.com/athena/latest/ug/reserved-words.html, "Reserved keywords to
# escape in DDL statements").
_DDL_RESERVED_LIST = """
    ALL ALTER AND ARRAY AS AUTHORIZATION BETWEEN BIGINT BINARY BOOLEAN BOTH BY CASE CASHE CAST
    CHAR COLUMN CONF CONSTRAINT COMMIT CREATE CROSS CUBE CURRENT CURRENT_DATE CURRENT_TIMESTAMP
    CURSOR DATABASE DATE DAYOFWEEK DECIMAL DELETE DESCRIBE DISTINCT DIV DOUBLE DROP ELSE END
    EXCHANGE EXISTS EXTENDED EXTERNAL EXTRACT FALSE FETCH FLOAT FLOOR FOLLOWING FOR FOREIGN FROM
    FULL FUNCTION GRANT GROUP GROUPING HAVING IF IMPORT IN INNER INSERT INT INTEGER INTERSECT
    INTERVAL INTO IS JOIN LATERAL LEFT LESS LIKE LOCAL MACRO MAP MORE NONE NOT NULL NUMERIC OF ON
    ONLY OR ORDER OUT OUTER OVER PARTIALSCAN PARTITION PERCENT PRECEDING PRECISION PRESERVE
    PRIMARY PROCEDURE RANGE READS REDUCE REGEXP REFERENCES REVOKE RIGHT RLIKE ROLLBACK ROLLUP ROW
    ROWS SELECT SET SMALLINT START TABLE TABLESAMPLE THEN TIME TIMESTAMP TO TRANSFORM TRIGGER
    TRUE TRUNCATE UNBOUNDED UNION UNIQUEJOIN UPDATE USER USING UTC_TIMESTAMP VALUES VARCHAR VIEWS
    WHEN WHERE WINDOW WITH
"""
DDL_RESERVED = frozenset(_DDL_RESERVED_LIST.split())
_PLAIN = re.compile(r"^[a-z_][a-z0-9_]*$")
_DATABASE = re.compile(r"^[a-z0-9_]{1,255}$")  # Athena: lowercase letters, digits and underscore

# Arrow type -> Athena (Hive DDL) type; timestamps of any unit or zone are `timestamp`.
_TYPES = {
    pa.bool_(): "boolean",
    pa.int8(): "tinyint",
    pa.int16(): "smallint",
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.string(): "string",
}


def projection(tiers: Sequence[str]) -> dict[str, dict[str, str]]:
    """How Athena projects each Hive partition of PARTITIONS; `tiers`: the registered tiers' names (the lake
    sits below accelbench.tiers, so the caller names them)."""
    found = {
        "accelerator_type": {"type": "enum", "values": ",".join(sorted(tiers))},
        "date": {
            "type": "date",
            "format": DATE_FORMAT,
            "range": f"{FIRST_DATE},NOW",
            "interval": "1",
            "interval.unit": "DAYS",
        },
    }
    if set(found) != set(PARTITIONS):
        raise RuntimeError(f"partition projection covers {sorted(found)}, the lake has {PARTITIONS}")
    return found


def athena_type(t: pa.DataType) -> str:
    """The column type Athena reads a Parquet column of this Arrow type as; unknown types are refused."""
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_list(t):
        return f"array<{athena_type(t.value_type)}>"
    try:
        return _TYPES[t]
    except KeyError:
        raise ValueError(f"no Athena type for Arrow type {t}") from None


def quote(name: str) -> str:
    """`name` backtick-quoted when Athena's DDL would read it as a keyword (or it is not plain)."""
    return f"`{name}`" if name.upper() in DDL_RESERVED or not _PLAIN.match(name) else name


def table_location(lake_uri: str, table: str) -> str:
    return f"{lake_uri.rstrip('/')}/{table}/"


def location_template(lake_uri: str, table: str) -> str:
    """Where a partition's files are, as Lake.table_path writes them, with ${partition} placeholders."""
    folders = "/".join(f"{p}=${{{p}}}" for p in PARTITIONS)
    return f"{table_location(lake_uri, table)}{folders}/"


def _properties(lake_uri: str, table: str, tiers: Sequence[str]) -> list[tuple[str, str]]:
    props = [("projection.enabled", "true")]
    projected = projection(tiers)
    for part in PARTITIONS:
        props += [(f"projection.{part}.{key}", value) for key, value in projected[part].items()]
    props += [
        ("storage.location.template", location_template(lake_uri, table)),
        ("parquet.compression", "ZSTD"),
    ]
    return props


def create_table(table: str, lake_uri: str, tiers: Sequence[str], database: str = DEFAULT_DATABASE) -> str:
    """One `CREATE EXTERNAL TABLE` for a table of TABLES, its columns from the pyarrow schema."""
    cols = ",\n".join(f"  {quote(f.name)} {athena_type(f.type)}" for f in TABLES[table])
    parts = ", ".join(f"{quote(p)} string" for p in PARTITIONS)
    props = ",\n".join(f"  '{k}'='{v}'" for k, v in _properties(lake_uri, table, tiers))
    return (
        f"CREATE EXTERNAL TABLE IF NOT EXISTS {quote(database)}.{quote(table)} (\n{cols}\n)\n"
        f"PARTITIONED BY ({parts})\n"
        "STORED AS PARQUET\n"
        f"LOCATION '{table_location(lake_uri, table)}'\n"
        f"TBLPROPERTIES (\n{props}\n);"
    )


def check_database(database: str) -> str:
    if not _DATABASE.match(database):
        raise ConfigError("--database", database, "Athena database names are lowercase letters, digits and _")
    return database


def check_location(lake_uri: str, field: str = LAKE_SETTING) -> str:
    """Athena reads tables from S3 only: a local lake has no DDL worth printing."""
    if not lake_uri.startswith("s3://"):
        raise ConfigError(
            field,
            lake_uri,
            "Athena reads tables only from s3:// locations; pass --lake s3://bucket/prefix "
            f"or set {LAKE_SETTING} to the S3 lake",
        )
    return lake_uri


def ddl(lake_uri: str, tiers: Sequence[str], database: str = DEFAULT_DATABASE) -> str:
    """The database and one table per lake table, `;`-terminated statements separated by a blank line;
    `tiers`: the values of the accelerator_type partition (accelbench.tiers.names())."""
    check_database(database)
    statements = [f"CREATE DATABASE IF NOT EXISTS {quote(database)};"]
    statements += [create_table(name, lake_uri, tiers, database) for name in sorted(TABLES)]
    return "\n\n".join(statements) + "\n"
