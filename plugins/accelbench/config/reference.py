"""The configuration reference page (docs/reference/configuration.md, scripts/gen_reference.py): one table
per group of settings, rendered from their declarations."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic.fields import FieldInfo

from accelbench.config.base import TITLES_AFTER_TIERS, TITLES_BEFORE_TIERS, _base_type
from accelbench.config.settings import env_name, fields, tier_groups


def _extra(field: FieldInfo) -> dict[str, Any]:
    """What _setting() stored for the reference page (group, shown default and type, minimum)."""
    extra = field.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def _type_text(field: FieldInfo) -> str:
    kind = _base_type(field.annotation)
    if get_origin(field.annotation) is Literal:
        return " \\| ".join(f"`{v}`" for v in get_args(field.annotation))
    if kind is tuple:
        paths = _base_type(get_args(field.annotation)[0]) is Path
        return "comma-separated paths" if paths else "comma-separated list"
    return {bool: "boolean", int: "integer", Path: "path", str: "string"}.get(kind, str(kind))


def _default_text(field: FieldInfo) -> str:
    default = field.get_default(call_default_factory=False)
    if default is None or default == "" or default == ():
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, tuple):
        return f"`{','.join(map(str, default))}`"
    return f"`{default}`"


def reference_markdown() -> str:
    """The configuration reference: one table (variable, type, default, description) per group, the
    registered tiers' own between the library's and the DAGs'."""
    titles = (*TITLES_BEFORE_TIERS, *(g.title for g in tier_groups().values()), *TITLES_AFTER_TIERS)
    groups: dict[str, list[str]] = {}
    for name, field in fields().items():
        extra = _extra(field)
        shown_type = str(extra.get("shown_type") or _type_text(field))
        shown_default = str(extra.get("shown_default") or _default_text(field))
        row = f"| `{env_name(name)}` | {shown_type} | {shown_default} | {field.description} |"
        groups.setdefault(str(extra["group"]), []).append(row)
    parts = []
    for group, rows in sorted(groups.items(), key=lambda item: titles.index(item[0])):
        parts += [
            f"## {group}",
            "",
            "| variable | type | default | description |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    return "\n".join(parts).rstrip("\n") + "\n"
