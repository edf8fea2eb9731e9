"""No import cycles between modules: the layers stay layers inside each package too.

The import graph of the installed packages is built with grimp (the engine
of import-linter, which `make test` runs for the contracts in setup.cfg);
imports under ``if TYPE_CHECKING:`` count, since a cycle of type-only
imports is still a tangle to read and to change. Strongly connected
components (Tarjan) of more than one module are cycles; a package is clean
when no cycle touches any of its modules, so a cycle that runs through two
packages fails both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grimp
import pytest

# packages (or modules) that must not take part in any import cycle
ACYCLIC = (
    "jetstream_server.core",
    "jetstream_server.jetstream",
    "jetstream_server.app",
    "jetstream_server.store",
    "jetstream_server.config",
    "spark_jetstream",
)


def strongly_connected_components(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on deep graphs).

    `edges` maps a module to the modules it imports; modules that appear only
    as targets are nodes too. Returns every component, each sorted."""
    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                target = pending.pop()
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, sorted(edges.get(target, ()))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
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


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    return [c for c in strongly_connected_components(edges) if len(c) > 1]


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    members = set(cycle)
    lines = [f"  cycle of {len(cycle)} modules:"]
    for module in cycle:
        inside = sorted(graph.find_modules_directly_imported_by(module) & members)
        lines.append(f"    {module} -> {', '.join(inside)}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # cache_dir=None: no cache files written into the working tree
    return grimp.build_graph("jetstream_server", "spark_jetstream", cache_dir=None)


@pytest.mark.parametrize("package", ACYCLIC)
def test_no_import_cycles(graph: grimp.ImportGraph, package: str) -> None:
    assert any(_in(m, package) for m in graph.modules), f"{package} is not in the graph"
    cycles = [c for c in import_cycles(graph) if any(_in(m, package) for m in c)]
    assert not cycles, f"import cycles through {package}:\n" + "\n".join(
        _describe(graph, c) for c in cycles
    )


def test_cycle_finder_finds_cycles() -> None:
    """The detector itself: a three-module ring, a self-contained pair, a tail."""
    g = grimp.ImportGraph()
    for importer, imported in [
        ("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"),  # ring
        ("p.c", "p.d"), ("p.d", "p.e"),  # tail, no cycle
        ("q.x", "q.y"), ("q.y", "q.x"),  # pair
    ]:
        g.add_import(importer=importer, imported=imported)
    assert sorted(import_cycles(g)) == [["p.a", "p.b", "p.c"], ["q.x", "q.y"]]
    assert "p.a -> p.b" in _describe(g, ["p.a", "p.b", "p.c"])


def test_components_on_a_long_chain() -> None:
    chain = {f"m{i:05d}": [f"m{i + 1:05d}"] for i in range(5000)}
    chain["m05000"] = ["m00000"]  # closes one big ring
    (ring,) = [c for c in strongly_connected_components(chain) if len(c) > 1]
    assert len(ring) == 5001
