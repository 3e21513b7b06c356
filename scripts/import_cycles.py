"""Import cycles inside accelbench: between its direct subpackages, and between modules.

Run: .venv/bin/python scripts/import_cycles.py

Uses grimp, the graph library import-linter checks its contracts with, so what this prints is what the
layers contract in pyproject.toml sees (imports inside functions and TYPE_CHECKING blocks included).
A package is a direct child of accelbench (accelbench.cli counts as its own); a package cycle is a set
of packages that reach one another, printed with one example import for each edge inside it.
Exits 1 when any cycle is found, so it can gate a change.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping

import grimp

ROOT = "accelbench"


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's components of more than one node, each sorted: a cycle is a component, not one path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def package_of(module: str) -> str:
    """accelbench.lake.ingest -> lake; the root package itself -> its own name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def main() -> int:
    graph = grimp.build_graph(ROOT, cache_dir=None)
    modules = sorted(graph.modules)
    module_edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}

    package_edges: dict[str, set[str]] = defaultdict(set)
    example: dict[tuple[str, str], tuple[str, str]] = {}
    for importer, imported in ((a, b) for a, targets in module_edges.items() for b in targets):
        pa, pb = package_of(importer), package_of(imported)
        if pa != pb and pb != ROOT:
            package_edges[pa].add(pb)
            example.setdefault((pa, pb), (importer, imported))

    package_cycles = strongly_connected({p: sorted(t) for p, t in package_edges.items()})
    print(f"package cycles: {len(package_cycles)}")
    for cycle in package_cycles:
        print("  " + " <-> ".join(cycle))
        members = set(cycle)
        for pa in cycle:
            for pb in sorted(package_edges[pa] & members):
                importer, imported = example[(pa, pb)]
                print(f"    {pa} -> {pb}: {importer} imports {imported}")

    module_cycles = strongly_connected(module_edges)
    print(f"module cycles: {len(module_cycles)}")
    for cycle in module_cycles:
        print("  " + " <-> ".join(cycle))
    return 1 if package_cycles or module_cycles else 0


if __name__ == "__main__":
    sys.exit(main())
