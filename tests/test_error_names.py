"""The library layers name parameters, not TOML fields, in their errors.

``dpgossip.data``, ``topology``, ``protocol``, ``engine`` and ``privacy`` are called from Python with
parameters (``load_dataset(agents=...)``); their ``ConfigError`` messages name those parameters and set
``ConfigError.field``, and the scenario layer renames them to TOML paths with
:func:`dpgossip.errors.renamed_fields`. This test reads their source and fails on a TOML path
(``network.agents``, ``data.source``, ``engine.loss``, ...) in the text of a ``ConfigError`` or of any
``raise`` statement.

A home's ``kinds.py`` is the exception: it declares the kind's scenario settings and its ``check``
reads a resolved scenario configuration (``check(config)``), so its messages name TOML paths by design.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dpgossip"
LIBRARY = ("data", "topology", "protocols", "engine", "privacy")
TOML_PATH = re.compile(r"(?<![\w./])(?:data|network|protocol|privacy|engine)\.[a-z_]")

ALLOWED: set[tuple[str, str]] = {
    # calibrate_noise's own parameter `protocol` (a FixedProtocol) and its rank, not the [protocol] table
    ("protocols/ddppm/calibrate.py", "calibrate: protocol.rank must be 1, got "),
}
"""``(file, text)`` of messages that may look like a TOML path, each with a comment saying why."""


def _message_texts(tree: ast.AST) -> list[str]:
    """The literal text (strings and the literal parts of f-strings) of every ``ConfigError(...)`` call
    and ``raise`` statement in ``tree``, each string once, in source order."""
    roots = [node.exc if isinstance(node, ast.Raise) else node for node in ast.walk(tree)
             if (isinstance(node, ast.Raise) and node.exc is not None)
             or (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ConfigError")]
    strings = {id(n): n for root in roots for n in ast.walk(root)
               if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return [n.value for n in sorted(strings.values(), key=lambda n: (n.lineno, n.col_offset))]


def toml_paths_in_library_errors() -> set[tuple[str, str]]:
    found = set()
    for package in LIBRARY:
        for path in sorted((SRC / package).rglob("*.py")):
            if package == "protocols" and path.name == "kinds.py":  # a kind's scenario settings
                continue
            for text in _message_texts(ast.parse(path.read_text(encoding="utf-8"))):
                if TOML_PATH.search(text):
                    found.add((str(path.relative_to(SRC)), text))
    return found


def test_library_errors_name_parameters_not_toml_paths():
    found = toml_paths_in_library_errors()
    assert found <= ALLOWED, "TOML paths in library errors (name the parameter, and let the scenario " \
        f"layer rename it with dpgossip.errors.renamed_fields): {sorted(found - ALLOWED)}"


def test_the_guard_finds_a_toml_path():
    tree = ast.parse('raise ConfigError(f"network.agents: must be >= 2, got {m}")\n'
                     'x = ConfigError("bad: needs data.source = \'synthetic\'")\n'
                     'raise ConfigError(f"agents: {m} agents, see dpgossip.data.load_dataset")\n')
    hits = [t for t in _message_texts(tree) if TOML_PATH.search(t)]
    assert hits == ["network.agents: must be >= 2, got ", "bad: needs data.source = 'synthetic'"]
