"""No module of dpgossip imports itself back, directly or through others, not even inside a function.

The graph has one node per module of ``src/dpgossip`` (a package is its ``__init__.py``) and an edge
``a -> b`` for every import statement of ``a`` that loads ``b``, wherever it stands: at the top, inside
a function or a class, under ``try``. The rules, in the order they are applied:

* ``import a.b.c`` is an edge to ``a.b.c``; ``from a.b import c`` is an edge to the submodule ``a.b.c``
  when that is a module, else (``c`` is a name defined in ``a.b``) an edge to ``a.b``. Relative imports
  are resolved against the importing module's package first.
* ``from dpgossip import name`` goes through the lazy facade (``dpgossip/__init__.py``, PEP 562) to the
  module ``_LAZY`` names for it, as ``tests/test_layers.py`` does: the facade itself imports nothing at run
  time.
* Importing ``a.b.c`` runs the packages ``a`` and ``a.b`` first, but that is not an edge to their
  ``__init__``: a submodule uses nothing its parent's ``__init__`` defines unless it imports it, and
  Python puts a package in ``sys.modules`` before it runs its ``__init__``, so an ``__init__`` that imports
  its own submodules (which import each other) is not run twice. Only an explicit import of the package
  (``import a.b``, or ``from a.b import name`` for a name of its ``__init__``) is an edge to it, and then
  the ``__init__``'s own imports count as that package's edges.
* Imports under ``if TYPE_CHECKING:`` are not run and are no edge; ``importlib.import_module`` calls are
  dynamic (the registry's discovery of ``protocols/<home>/kinds.py``) and are not edges either.

A cycle is reported as its shortest path from one member back to itself, each step with the file and line
of the import statement.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path

from dpgossip import _LAZY

SRC = Path(__file__).resolve().parents[1] / "src" / "dpgossip"

Edges = dict[str, dict[str, str]]  # importer -> {imported module: "file:line" of the first such import}


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module under ``root`` (the folder of package ``package``) by its dotted name."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join((package, *parts))] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_time_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement in ``tree`` but those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """``name`` if it is a module of the package, else its longest prefix that is (None outside)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _targets(node: ast.Import | ast.ImportFrom, importer: str, modules: Mapping[str, Path],
             package: str, lazy: Mapping[str, str]) -> Iterator[str]:
    """The dotted names one import statement of module ``importer`` loads (module docstring's rules)."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names)
        return
    if node.level:
        is_package = modules[importer].name == "__init__.py"
        anchor = importer.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, node.module] if node.module else anchor)
    else:
        base = node.module or ""
    for alias in node.names:
        if base == package and alias.name in lazy:
            yield lazy[alias.name]
        elif f"{base}.{alias.name}" in modules:
            yield f"{base}.{alias.name}"
        else:
            yield base


def import_graph(root: Path, package: str, lazy: Mapping[str, str] = {}) -> Edges:
    """The import graph of the package ``package`` whose folder is ``root`` (module docstring)."""
    modules = module_names(root, package)
    edges: Edges = {name: {} for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _run_time_imports(tree):
            for target in _targets(node, name, modules, package, lazy):
                known = _known(target, modules)
                if known is not None:
                    edges[name].setdefault(known, f"{path.relative_to(root.parent)}:{node.lineno}")
    return edges


def _components(edges: Edges) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one that imports itself
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1 or node in edges[node]:
                        found.append(sorted(members))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _shortest_cycle(edges: Edges, members: list[str]) -> list[str]:
    """The shortest path from ``members[0]`` back to itself inside the component (breadth first)."""
    start, inside = members[0], set(members)
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges[node]):
            if child not in inside:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start] if node != start else [start, start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def cycles(edges: Edges) -> list[str]:
    """One line per import cycle: its size and a shortest cycle, every step with file and line."""
    lines = []
    for members in _components(edges):
        path = _shortest_cycle(edges, members)
        steps = " -> ".join(f"{a} ({edges[a][b]})" for a, b in zip(path, path[1:], strict=False))
        lines.append(f"{len(members)} modules [{', '.join(members)}]: {steps} -> {path[-1]}")
    return lines


def test_no_module_import_cycle():
    found = cycles(import_graph(SRC, "dpgossip", _LAZY))
    assert not found, "import cycles:\n" + "\n".join(found)


def _write(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_planted_cycle_through_a_function_level_import_is_found(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from pkg.sub.a import f\n",
        "pkg/sub/a.py": "from .b import g\n\ndef f():\n    return g()\n",
        "pkg/sub/b.py": "def g():\n    from pkg.sub import c\n    return c\n",
        "pkg/sub/c.py": "import pkg.sub.a\n",
        "pkg/leaf.py": "import os\n",
    })
    edges = import_graph(pkg, "pkg")
    assert edges["pkg.sub.a"] == {"pkg.sub.b": "pkg/sub/a.py:1"}  # relative import resolved
    assert set(edges["pkg.sub.b"]) == {"pkg.sub.c"}  # `from package import module` is the submodule
    found = cycles(edges)
    assert len(found) == 1, found
    assert found[0].startswith("3 modules [pkg.sub.a, pkg.sub.b, pkg.sub.c]: pkg.sub.a (pkg/sub/a.py:1) -> "
                               "pkg.sub.b (pkg/sub/b.py:2) -> pkg.sub.c (pkg/sub/c.py:1) -> pkg.sub.a")


def test_package_edges_type_checking_and_the_facade(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n",
        "pkg/sub/__init__.py": "from pkg.sub.a import f\nfrom pkg.sub.b import g\n",
        "pkg/sub/a.py": "from pkg.sub.b import g\n\ndef f():\n    return g()\n",  # sibling: no cycle
        "pkg/sub/b.py": "def g():\n    from pkg import A, helper\n    return A, helper\n",
        "pkg/a.py": "A = 1\n",
        "pkg/helper.py": "",
    })
    edges = import_graph(pkg, "pkg", {"A": "pkg.a"})
    assert edges["pkg"] == {}  # under TYPE_CHECKING: not run
    assert set(edges["pkg.sub.b"]) == {"pkg.a", "pkg.helper"}  # through the lazy facade
    assert cycles(edges) == []
    # a submodule importing a name of its own package's __init__ closes a cycle with it
    (pkg / "sub" / "b.py").write_text("from pkg.sub import f\n", encoding="utf-8")
    found = cycles(import_graph(pkg, "pkg"))
    assert len(found) == 1 and found[0].startswith("3 modules [pkg.sub, pkg.sub.a, pkg.sub.b]"), found


def test_a_module_importing_itself_is_a_cycle(tmp_path):
    pkg = _write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "def f():\n    from pkg import a\n"})
    assert cycles(import_graph(pkg, "pkg")) == ["1 modules [pkg.a]: pkg.a (pkg/a.py:2) -> pkg.a"]
