"""Data flows one way: topology/data -> engine -> privacy -> protocols -> scenario -> report -> cli.

Walks every module's imports (top level and inside functions) and fails on an import of a higher layer
that is not in ``KNOWN``. ``KNOWN`` lists upward imports still to be removed (none since the privacy
adapter moved into ``scenario/`` and the plots out of ``scenario.run``); the test also fails
when one of them is gone, so the list only shrinks.

The package root has two kinds of module. ``dpgossip/__init__.py`` is the public facade
(``import dpgossip as dg``): it re-exports names of every layer, so it sits at the top of the order,
above ``cli``. It must import them lazily (PEP 562 ``__getattr__``; only under ``TYPE_CHECKING``
statically), because importing any module of the package runs it first: an eager import of a layer there
would load every layer on ``import dpgossip.errors`` and close an import cycle.
``test_the_facade_imports_no_layer_at_import_time`` checks that. The other root modules but ``cli.py``
(``errors.py``, ``rng.py``, ``resources.py``, ...) are the base every layer may use, below every layer.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from dpgossip import _LAZY

LAYER = {"topology": 0, "data": 0, "engine": 1, "privacy": 2, "protocols": 3, "scenario": 4,
         "report": 5, "cli": 6}
FACADE = 7  # dpgossip/__init__.py, the lazy public re-exports (module docstring)
BASE = -1  # the other modules of the package root but cli.py: errors.py, rng.py, ...
SRC = Path(__file__).resolve().parents[1] / "src" / "dpgossip"
KNOWN: set[tuple[str, str]] = set()


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "dpgossip" and node.level == 0:
            # `from dpgossip import audit_pairs` goes through the facade to the name's own layer
            out.update(_LAZY.get(a.name, f"dpgossip.{a.name}") for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _layer_of(rel: Path) -> int:
    if len(rel.parts) == 1:  # a module of the package root: the facade, cli.py or the base
        return FACADE if rel.name == "__init__.py" else LAYER.get(rel.stem, BASE)
    return LAYER[rel.parts[0]]  # a subpackage missing from LAYER fails here: give it a layer


def upward_imports() -> set[tuple[str, str]]:
    found = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        layer = _layer_of(rel)
        for mod in _imports(path):
            parts = mod.split(".")
            if parts[0] == "dpgossip" and len(parts) > 1 and LAYER.get(parts[1], -1) > layer:
                found.add((rel.as_posix(), mod))
    return found


def test_no_module_imports_a_higher_layer():
    found = upward_imports()
    assert not found - KNOWN, f"new upward imports: {sorted(found - KNOWN)}"
    assert not KNOWN - found, f"fixed, remove from KNOWN: {sorted(KNOWN - found)}"


def test_the_walker_sees_an_upward_import(tmp_path):
    # the check can fail: a protocol module importing the privacy layer is reported
    mod = tmp_path / "m.py"
    mod.write_text("def f():\n    from dpgossip.protocols.ddppm.audit import audit_pairs\n", encoding="utf-8")
    assert "dpgossip.protocols.ddppm.audit" in _imports(mod)
    mod.write_text("from dpgossip import ConfigError, audit_pairs, cli\n", encoding="utf-8")
    assert _imports(mod) == {"dpgossip.ConfigError", "dpgossip.protocols.ddppm.audit", "dpgossip.cli"}
    assert [_layer_of(Path(p)) for p in ("__init__.py", "cli.py", "rng.py", "data/__init__.py")] \
        == [FACADE, LAYER["cli"], BASE, LAYER["data"]]


def test_the_facade_imports_no_layer_at_import_time():
    # `import dpgossip` loads only the base; a public name loads its own subpackage on first use
    code = """
import json, sys
import dpgossip as dg
loaded = lambda: sorted(m for m in sys.modules if m.startswith("dpgossip"))
first = loaded()
dg.load_dataset
print(json.dumps([first, loaded()]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, then = json.loads(out.stdout)
    assert first == ["dpgossip", "dpgossip.errors"]
    assert "dpgossip.data" in then and not any(m.startswith("dpgossip.privacy") for m in then)
