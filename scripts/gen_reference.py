"""The generated parts of the reference pages in docs/reference/ (and the dependency table of
docs/explanation/architecture.md), rendered from the code that defines them.

Run: .venv/bin/python scripts/gen_reference.py          rewrite every generated section in place
     .venv/bin/python scripts/gen_reference.py --check  exit 1 (and name the section) when one is stale

A page marks each generated section with a pair of comments, and keeps its own prose around them:

    <!-- generated:NAME -->
    ...what render() returns...
    <!-- /generated:NAME -->

A new section is one more Section in SECTIONS: the page, the marker name, and a function of no arguments
that returns the Markdown (imported lazily, so one section's imports do not slow the others' checks).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))  # the library, without an install


@dataclass(frozen=True)
class Section:
    page: Path  # relative to the repository root
    name: str  # the marker: <!-- generated:NAME --> ... <!-- /generated:NAME -->
    render: Callable[[], str]


def _settings() -> str:
    import accelbench.tiers  # noqa: F401  # registers each tier's settings group, which the page lists
    from accelbench.config import reference_markdown

    return reference_markdown()


def _dag_params() -> str:
    from accelbench.airflow.campaign_params import render_dag_params

    return render_dag_params()


def _lake_schema() -> str:
    from accelbench.lake.schemas import reference_markdown

    return reference_markdown()


def _tiers() -> str:
    from accelbench.tiers.reference import reference_markdown

    return reference_markdown()


def _package_imports() -> str:
    """What each package of accelbench imports directly (grimp, the graph lint-imports checks), in the
    order of the layers contract, top first."""
    import collections
    import tomllib

    import grimp

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    # The package layers: the layers contract over `accelbench` itself (others order a package's modules).
    (layers,) = [
        c["layers"]
        for c in config["contracts"]
        if c["type"] == "layers" and c.get("containers") == ["accelbench"]
    ]
    order = [name.strip() for layer in layers for name in layer.split("|")]
    graph = grimp.build_graph("accelbench", cache_dir=None)
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for module in graph.modules:
        for target in graph.find_modules_directly_imported_by(module):
            source, dest = module.split(".")[1:2], target.split(".")[1:2]
            if source and dest and source != dest:
                edges[source[0]].add(dest[0])
    rows = ["| package | imports (directly) |", "|---|---|"]
    for package in order:
        deps = ", ".join(f"`{d}`" for d in sorted(edges[package])) or "(nothing in `accelbench`)"
        rows.append(f"| `{package}` | {deps} |")
    return "\n".join(rows) + "\n"


SECTIONS: list[Section] = [
    Section(Path("docs/reference/configuration.md"), "settings", _settings),
    Section(Path("docs/reference/lake-schema.md"), "lake-schema", _lake_schema),
    Section(Path("docs/reference/dag-params.md"), "dag-params", _dag_params),
    Section(Path("docs/explanation/architecture.md"), "package-imports", _package_imports),
    Section(Path("docs/reference/tiers.md"), "tiers", _tiers),
]


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated:{re.escape(name)} -->\n)(.*?)(<!-- /generated:{re.escape(name)} -->)", re.DOTALL
    )


def section_body(text: str, name: str) -> str:
    """What a page holds between the markers of `name` (a ValueError when the markers are missing)."""
    found = _pattern(name).search(text)
    if found is None:
        raise ValueError(f"no <!-- generated:{name} --> ... <!-- /generated:{name} --> markers")
    return found.group(2)


def replace_section(text: str, name: str, body: str) -> str:
    """The page with the section `name` replaced by `body`, the markers and the prose around kept."""
    section_body(text, name)  # the markers must be there
    body = body if body.endswith("\n") else body + "\n"
    return _pattern(name).sub(lambda m: m.group(1) + body + m.group(3), text, count=1)


def stale(sections: list[Section] = SECTIONS, root: Path = REPO) -> list[str]:
    """`page#name` of every section whose page differs from its render."""
    out = []
    for section in sections:
        text = (root / section.page).read_text()
        if replace_section(text, section.name, section.render()) != text:
            out.append(f"{section.page}#{section.name}")
    return out


def write(sections: list[Section] = SECTIONS, root: Path = REPO) -> list[str]:
    """Rewrite the stale sections; returns what changed."""
    changed = []
    for section in sections:
        path = root / section.page
        text = path.read_text()
        new = replace_section(text, section.name, section.render())
        if new != text:
            path.write_text(new)
            changed.append(f"{section.page}#{section.name}")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a section is stale")
    args = parser.parse_args(argv)
    if args.check:
        out = stale()
        for name in out:
            print(f"stale: {name} (run scripts/gen_reference.py)", file=sys.stderr)
        return 1 if out else 0
    for name in write():
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
