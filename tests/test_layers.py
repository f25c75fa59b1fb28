"""Data flows one way: topology/data -> protocol -> engine -> privacy -> scenario -> report -> cli.

Walks every module's imports (top level and inside functions) and fails on an import of a higher layer
that is not in ``KNOWN``. ``KNOWN`` lists the upward imports that remain until the scenario redesign
(issue 11) moves the privacy adapter into ``scenario/`` and the plots out of ``scenario.run``; the test
also fails when one of them is gone, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

LAYER = {"topology": 0, "data": 0, "protocol": 1, "engine": 2, "privacy": 3, "scenario": 4,
         "report": 5, "cli": 6}
SRC = Path(__file__).resolve().parents[1] / "src" / "dpgossip"
KNOWN = {
    ("privacy/section.py", "dpgossip.scenario.sections"),
    ("privacy/section.py", "dpgossip.scenario.runner"),
    ("scenario/__init__.py", "dpgossip.report"),
}


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def upward_imports() -> set[tuple[str, str]]:
    found = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        layer = LAYER.get(rel.parts[0].removesuffix(".py"))
        if layer is None:  # dpgossip/errors.py, rng.py, ...: the base every layer may use
            continue
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
    mod.write_text("def f():\n    from dpgossip.privacy.audit import audit_pairs\n", encoding="utf-8")
    assert "dpgossip.privacy.audit" in _imports(mod)
