"""No function in ``src/`` is longer than 80 lines or takes more than 12 parameters.

Lines run from the ``def`` line to the function's last line (docstring included); parameters count
every positional, keyword-only, ``*args`` and ``**kwargs`` parameter, not ``self`` or ``cls``.
``KNOWN`` lists the functions still over a limit; the test also fails when one of them is fixed, so
the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_LINES = 80
MAX_PARAMS = 12
SRC = Path(__file__).resolve().parents[1] / "src" / "dpgossip"
KNOWN: set[str] = set()


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    n = len(names) + (a.vararg is not None) + (a.kwarg is not None)
    return n - (1 if names and names[0] in ("self", "cls") else 0)


def oversized(root: Path = SRC) -> dict[str, tuple[int, int]]:
    """``{"path:name": (lines, params)}`` of every function over a limit."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                params = _params(node)
                if lines > MAX_LINES or params > MAX_PARAMS:
                    out[f"{path.relative_to(root).as_posix()}:{node.name}"] = (lines, params)
    return out


def test_no_function_is_too_long_or_takes_too_many_parameters():
    found = oversized()
    new = {k: v for k, v in found.items() if k not in KNOWN}
    assert not new, f"functions over {MAX_LINES} lines or {MAX_PARAMS} parameters: {new}"
    assert not KNOWN - set(found), f"fixed, remove from KNOWN: {sorted(KNOWN - set(found))}"


def test_the_walker_sees_a_long_function_and_many_parameters(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(
        f"def long():\n{body}\n\n"
        f"def wide(self, {', '.join(f'a{i}' for i in range(MAX_PARAMS))}, *args, **kw):\n"
        "    pass\n\n"
        f"def fine(self, {', '.join(f'a{i}' for i in range(MAX_PARAMS))}):\n    pass\n",
        encoding="utf-8")
    found = oversized(tmp_path)
    assert found == {"m.py:long": (MAX_LINES + 1, 0), "m.py:wide": (2, MAX_PARAMS + 2)}
