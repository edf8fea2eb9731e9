"""Import cycles: none inside the packages that show the server's layers.

`find_cycles(package)` builds the import graph of the installed
`jetstream_server` with grimp (the library under import-linter, which counts
every import: function-level and `if TYPE_CHECKING:` ones too), keeps the
modules at or under `package`, and returns its strongly connected components
of more than one module (Tarjan's algorithm): each is a set of modules that
import each other, directly or through others. Import-linter's layer
contracts (setup.cfg) forbid imports across layers; this test covers what
they cannot: two modules of one layer importing each other.
"""

from __future__ import annotations

import grimp
import pytest


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative: deep graphs need no recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            if children:
                child = children.pop()
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def find_cycles(package: str) -> list[list[str]]:
    """Groups of modules at or under `package` that import each other (sorted)."""
    graph = grimp.build_graph("jetstream_server")

    def inside(module: str) -> bool:
        return module == package or module.startswith(package + ".")

    modules = {m for m in graph.modules if inside(m)}
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m) if inside(i)} for m in modules}
    return sorted(c for c in _strongly_connected(edges) if len(c) > 1)


def test_find_cycles_sees_a_cycle() -> None:
    """The detector itself: a two-module cycle and a self-contained chain."""
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"d"}}
    assert [c for c in _strongly_connected(graph) if len(c) > 1] == [["a", "b"]]


@pytest.mark.parametrize("package", ["jetstream_server.jetstream"])
def test_no_import_cycles(package: str) -> None:
    assert find_cycles(package) == []
