"""The house rules of the source tree, read from the code itself (AST), not from a list kept by hand.

* Imports only point down: front ends (``placer.cli``, ``placer.service``) -> ``placer.scenarios`` ->
  ``placer.solver`` -> ``placer.solver.jobs`` -> ``placer.topology``. Function-local imports count too:
  hiding a loop inside a function is still a loop.
* The independent checker (``placer.solver.checks``) reaches only the vocabulary — decisions, jobs,
  prices, the cluster model — never an engine, not even through another module.
* Nothing imports the bare folder names ``solver``, ``topology`` or ``scenarios``.
* Every package folder is installed (``pyproject.toml``'s explicit package list) and every public module
  says what it exports (``__all__``).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parents[1]
#: Installed package -> source folder (pyproject's package-dir).
ROOTS = {"placer": REPO / "placer", "placer.solver": REPO / "solver", "placer.topology": REPO / "topology",
         "placer.scenarios": REPO / "scenarios"}  # fmt: skip

#: Layers, lowest first; a module belongs to the longest prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("placer.topology",),
    ("placer.solver.jobs",),
    ("placer.solver",),
    ("placer.scenarios",),
    ("placer.cli", "placer.service", "placer"),
)
#: What the checker may reach, directly or through other placer modules.
# placer.solver.frames is the Decision's own presentation (tables for notebooks, imported by the
# Decision's methods); it imports the Decision and pandas only, no engine.
CHECKER_VOCABULARY = ("placer.solver.checks", "placer.solver.decision", "placer.solver.frames",
                      "placer.solver.jobs", "placer.solver.prices", "placer.topology")  # fmt: skip
BARE = ("solver", "topology", "scenarios")


def modules() -> Iterator[tuple[str, Path]]:
    """Every module of the installed tree with its file, named as it is installed."""
    for root, folder in ROOTS.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([root, *parts])
            if root == "placer" and parts[:1] and parts[0] in {"solver", "topology", "scenarios"}:
                continue
            yield name, path


def _typing_only(tree: ast.Module) -> set[int]:
    """Ids of the import nodes under ``if TYPE_CHECKING:`` (annotations only; never executed)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def imports_of(source: str, module: str, is_package: bool, *, runtime: bool = False) -> set[str]:
    """Absolute names of the modules ``source`` imports, anywhere in the file (``from a import b`` counts
    as ``a`` and, when ``a.b`` is a module, as ``a.b``: the caller filters). ``runtime``: leave out the
    imports made for annotations only."""
    out: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    skip = _typing_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{alias.name}" for alias in node.names)
    return out


def layer(name: str) -> int:
    best, rank = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    return rank


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``importer -> imported`` for every import that points to a higher layer."""
    return [
        f"{src} (layer {layer(src)}) imports {dst} (layer {layer(dst)})"
        for src, targets in sorted(graph.items())
        for dst in sorted(targets)
        if layer(dst) > layer(src)
    ]


def build_graph(*, runtime: bool = False) -> dict[str, set[str]]:
    known = dict(modules())
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = imports_of(path.read_text(), name, path.name == "__init__.py", runtime=runtime)
        graph[name] = {t for t in targets if t in known and t != name}
    return graph


GRAPH = build_graph()


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a loop (a package importing its own
    submodules to re-export them is not a loop)."""
    g = nx.DiGraph()
    g.add_nodes_from(graph)
    g.add_edges_from(
        (src, dst) for src, targets in graph.items() for dst in targets if not dst.startswith(src + ".")
    )
    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def test_the_graph_sees_the_engine() -> None:
    """The walk found the modules and their imports (an empty graph would make every rule pass)."""
    assert "placer.solver.engine" in GRAPH and "placer.cli" in GRAPH
    assert "placer.solver.policy" in GRAPH["placer.solver.engine"]


def test_imports_only_point_down() -> None:
    assert upward_imports(GRAPH) == []


def test_no_import_loops() -> None:
    """Runtime imports form no loop, function-local ones included (those only hide a loop). Imports made
    for annotations alone (``if TYPE_CHECKING:``) are not executed and do not count."""
    assert import_loops(build_graph(runtime=True)) == []


def test_a_loop_is_caught() -> None:
    loop = {
        "placer.solver.engine": {"placer.solver.planning"},
        "placer.solver.planning": {"placer.solver.engine"},
    }
    assert import_loops(loop) == [["placer.solver.engine", "placer.solver.planning"]]
    assert (
        import_loops({"placer.solver": {"placer.solver.engine"}, "placer.solver.engine": {"placer.solver"}})
        == []
    )


def test_an_upward_import_is_caught() -> None:
    """The rule can fail: a solver module importing the simulator, or topology importing a job model."""
    fake = {
        "placer.solver.engine": {"placer.scenarios.sim.loop"},
        "placer.topology.load": {"placer.solver.jobs"},
    }
    assert len(upward_imports(fake)) == 2
    src = "def f():\n    from placer.scenarios.sim import loop\n"
    assert "placer.scenarios.sim.loop" in imports_of(src, "placer.solver.x", False)
    assert "placer.solver.engine" in imports_of(
        "from ..engine import place\n", "placer.solver.cpsat.model", False
    )


def test_no_bare_folder_imports() -> None:
    bad = []
    for name, path in modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            bad += [f"{name}: {n}" for n in names if n.split(".")[0] in BARE]
    assert bad == []


def test_checker_reaches_only_the_vocabulary() -> None:
    seen, todo = set(), [m for m in GRAPH if m.startswith("placer.solver.checks")]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += GRAPH.get(m, ())
    outside = sorted(m for m in seen if not any(m == v or m.startswith(v + ".") for v in CHECKER_VOCABULARY))
    assert outside == []


def test_every_package_folder_is_installed() -> None:
    declared = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {name for name, path in modules() if path.name == "__init__.py"}
    assert folders == declared


@pytest.mark.parametrize(
    "name", sorted(n for n, p in modules() if not p.name.startswith("_") or p.name == "__init__.py")
)
def test_public_modules_declare_all(name: str) -> None:
    path = dict(modules())[name]
    tree = ast.parse(path.read_text())
    assigned = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    assert "__all__" in assigned, f"{path.relative_to(REPO)} has no __all__"
