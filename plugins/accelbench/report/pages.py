"""The Jinja environment of the report's HTML templates (autoescaped; shared by report and view)."""

from __future__ import annotations

from functools import cache

from jinja2 import Environment, PackageLoader, select_autoescape


@cache
def environment() -> Environment:
    return Environment(
        loader=PackageLoader("accelbench.report", "templates"), autoescape=select_autoescape(["j2"])
    )
