"""The file writer's view of a typed row: the flat columns the report's Parquet, CSV and page hold.

The one place an `Interval` becomes three columns (`<name>`, `<name>_low`, `<name>_high`: the names users
already query) and a nested part of a row (a point's configuration, its costs, its quality) becomes the
columns beside its parent's (`accelbench.report.model`: a field's metadata says inline or under a prefix).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import pyarrow as pa

from accelbench.core.intervals import CONFIDENCE, Interval

Record = dict[str, Any]  # a flat row as the files hold it: a column's name -> its value
_Writer = Callable[[Any, Record], None]


def _plain(name: str) -> _Writer:
    """A field's own column, or an interval's three (its names made once per type, not per row)."""
    low, high = f"{name}_low", f"{name}_high"

    def write(value: Any, out: Record) -> None:
        if isinstance(value, Interval):
            out[name], out[low], out[high] = value.estimate, value.low, value.high
        else:
            out[name] = list(value) if isinstance(value, tuple) else value

    return write


def _nested(prefix: str) -> _Writer:
    def write(value: Any, out: Record) -> None:
        for writer in _writers(type(value), prefix):
            writer(getattr(value, writer.__name__), out)

    return write


_WRITERS: dict[tuple[type, str], tuple[_Writer, ...]] = {}


def _writers(cls: type, prefix: str) -> tuple[_Writer, ...]:
    """Per field of `cls`, how it is written (kept per type: a report writes thousands of rows)."""
    if (cls, prefix) in _WRITERS:
        return _WRITERS[cls, prefix]
    found = []
    for f in dataclasses.fields(cls):
        name = prefix + f.name
        if f.metadata.get("inline"):
            writer = _nested(prefix)
        elif "prefix" in f.metadata:
            writer = _nested(prefix + f.metadata["prefix"])
        else:
            writer = _plain(name)
        writer.__name__ = f.name  # the attribute it reads
        found.append(writer)
    _WRITERS[cls, prefix] = tuple(found)
    return _WRITERS[cls, prefix]


def record(row: Any) -> Record:
    """`row` as the files' flat columns: a typed row (a dataclass) flattened, a mapping copied as it is."""
    if isinstance(row, Mapping):
        return dict(row)
    out: Record = {}
    for writer in _writers(type(row), ""):
        writer(getattr(row, writer.__name__), out)
    return out


def records(rows: Iterable[Any]) -> list[Record]:
    return [record(r) for r in rows]


def figure(row: Mapping[str, Any], column: str) -> Interval:
    """The interval `record` wrote as `column`'s three columns, read back from a file's row (the page's
    bounds, its plots' error bars, the capacity planner's data); no method: the files do not hold it."""
    estimate, low, high = (row.get(name) for name in (column, f"{column}_low", f"{column}_high"))
    return Interval(estimate, low, high, CONFIDENCE, "")


def _json_type(hint: Any) -> dict[str, Any]:  # JSON Schema documents, here and below
    """The JSON Schema of one column's values, from its annotation."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        found = [_json_type(a) for a in args if a is not type(None)]
        kinds = [t for f in found for t in ([f["type"]] if isinstance(f["type"], str) else f["type"])]
        return {"type": [*dict.fromkeys(kinds), *(["null"] if type(None) in args else [])]}
    if typing.get_origin(hint) is typing.Literal:
        return {"type": "string", "enum": list(args)}
    if typing.get_origin(hint) in (tuple, list):
        return {"type": "array", "items": _json_type(args[0])}
    known = {str: "string", bool: "boolean", int: "integer", float: "number"}
    if hint in known:
        return {"type": known[hint]}
    if hint is datetime:
        return {"type": "string", "format": "date-time"}
    raise TypeError(f"no JSON type for {hint!r}")


def _properties(cls: type, prefix: str) -> dict[str, Any]:  # column -> its JSON Schema
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}  # column -> its JSON Schema
    for f in dataclasses.fields(cls):
        hint, name = hints[f.name], prefix + f.name
        if f.metadata.get("inline"):
            out |= _properties(hint, prefix)
        elif "prefix" in f.metadata:
            out |= _properties(hint, prefix + f.metadata["prefix"])
        elif hint is Interval:
            number = {"type": ["number", "null"]}
            out |= {name: number, f"{name}_low": number, f"{name}_high": number}
        else:
            out[name] = _json_type(hint)
    return out


_ARROW = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}


def _arrow_type(schema: dict[str, Any]) -> pa.DataType:  # a column's JSON Schema
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    kind = next(k for k in kinds if k != "null")
    if kind == "array":
        return pa.list_(_arrow_type(schema["items"]))
    if schema.get("format") == "date-time":
        return pa.timestamp("us", tz="UTC")
    return _ARROW[kind]


def arrow_schema(cls: type) -> pa.Schema:
    """The Parquet schema of `record(row)` for a row of `cls` (every column nullable): what an empty table's
    files hold, so that a reader finds its columns before the first row."""
    return pa.schema([(name, _arrow_type(s)) for name, s in _properties(cls, "").items()])


def columns(cls: type) -> tuple[str, ...]:
    """The columns a typed row of `cls` is written as, in order (`record`'s keys)."""
    return tuple(_properties(cls, ""))


def json_schema(cls: type, title: str) -> dict[str, Any]:  # a JSON Schema document
    """The JSON Schema (draft 2020-12) of `record(row)` for a row of `cls`: what a page's JavaScript gets when
    the row is written as JSON, generated from the type that makes it."""
    properties = _properties(cls, "")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
