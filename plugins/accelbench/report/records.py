"""The file writer's view of a typed row: the flat columns the report's Parquet, CSV and page hold.

The one place an `Interval` becomes three columns (`<name>`, `<name>_low`, `<name>_high`: the names users
already query) and a nested part of a row (a point's configuration, its costs, its quality) becomes the
columns beside its parent's (`accelbench.report.model`: a field's metadata says inline or under a prefix).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from accelbench.core.intervals import Interval

Record = dict[str, Any]  # a flat row as the files hold it: a column's name -> its value
_Writer = Callable[[Any, Record], None]


def _interval(name: str) -> _Writer:
    def write(value: Interval, out: Record) -> None:
        out[name], out[f"{name}_low"], out[f"{name}_high"] = value.estimate, value.low, value.high

    return write


def _plain(name: str) -> _Writer:
    def write(value: Any, out: Record) -> None:
        if isinstance(value, Interval):
            _interval(name)(value, out)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            out[name] = record(value)  # a part not declared inline or prefixed: one column of its own
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
