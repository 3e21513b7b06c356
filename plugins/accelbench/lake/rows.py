"""`runs` rows as a pydantic model made from the table's pyarrow schema (lake/schemas.py), so a row that
misspells a column, or leaves one out, fails where it is built instead of landing as a null column.

`pa.Table.from_pylist(rows, schema=RUNS)` alone drops a key the schema lacks and reads a missing one as
null: a misspelt `server_exit_cod` would silently empty the column. RunRow has exactly the schema's
columns (tests/unit/test_evidence.py checks it), each required (None where the value is unknown), none other;
CapacityRow likewise for the `capacities` table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from accelbench.errors import AccelbenchError
from accelbench.lake.schemas import CAPACITIES, COSTS, RUNS, STARTUPS


def _python_type(column: pa.Field) -> Any:
    kind = column.type
    if pa.types.is_integer(kind):
        return int
    if pa.types.is_floating(kind):
        return float
    if pa.types.is_boolean(kind):
        return bool
    if pa.types.is_string(kind):
        return str
    if pa.types.is_timestamp(kind):
        return datetime
    raise TypeError(f"{column.name}: no Python type for {kind}")


def row_model(name: str, schema: pa.Schema) -> type[BaseModel]:
    """A model with one required, nullable field per column of `schema`, and no other."""
    fields: dict[str, Any] = {column.name: (_python_type(column) | None, ...) for column in schema}
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


RunRow = row_model("RunRow", RUNS)
CapacityRow = row_model("CapacityRow", CAPACITIES)
StartupRow = row_model("StartupRow", STARTUPS)
CostRow = row_model("CostRow", COSTS)


class RowError(AccelbenchError):
    """A row does not have the table's columns (a misspelt, missing or ill-typed one)."""


def _checked(
    model: type[BaseModel], table: str, key: str, rows: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """`rows` as `model` dumps them; a RowError names the row (its `key`) and every problem."""
    checked = []
    for row in rows:
        try:
            checked.append(model.model_validate(row).model_dump())
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise RowError(f"{table} row {row.get(key)!r}: {problems}") from None
    return checked


def runs_table(rows: Iterable[Mapping[str, Any]], *, complete: bool = True) -> pa.Table:
    """The `runs` table of `rows`, each checked against RunRow first.

    `complete=False` is for a row that knows only some columns (an imported result file): the absent
    ones are null, an unknown key still fails.
    """
    values = (row if complete else dict.fromkeys(RUNS.names) | dict(row) for row in rows)
    return pa.Table.from_pylist(_checked(RunRow, "runs", "run_id", values), schema=RUNS)


def capacities_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """The `capacities` table of `rows`, each checked against CapacityRow first (every column, none other)."""
    return pa.Table.from_pylist(_checked(CapacityRow, "capacities", "spec_id", rows), schema=CAPACITIES)


def startups_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """The `startups` table of `rows`, each checked against StartupRow first (every column, none other)."""
    return pa.Table.from_pylist(_checked(StartupRow, "startups", "spec_id", rows), schema=STARTUPS)


def costs_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """The `costs` table of `rows`, each checked against CostRow first (every column, none other)."""
    return pa.Table.from_pylist(_checked(CostRow, "costs", "spec_id", rows), schema=COSTS)
