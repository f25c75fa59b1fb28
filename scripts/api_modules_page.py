"""Write docs/api/modules.rst: one ``automodule`` entry (docstring only) for every module of the package.

``python scripts/api_modules_page.py`` rewrites the page from the source tree; ``--check`` exits 1 when
the page differs (``tests/test_api_reference.py`` checks that every module is listed). Modules with a
page of their own (``docs/api/<name>.rst`` for ``dpgossip.<name>``, e.g. errors) are left out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api" / "modules.rst"
HEAD = """Modules
=======

The docstring of every module of the package: the concept it holds and the equations it
implements. The public names of each subpackage are documented on its own page; this page
lists the modules they come from. ``tests/test_api_reference.py`` checks that it lists every
module; ``python scripts/api_modules_page.py`` writes it.
"""


def page() -> str:
    """The text of docs/api/modules.rst for the current source tree."""
    src = ROOT / "src"
    own = {f"dpgossip.{p.stem}" for p in PAGE.parent.glob("*.rst")} - {"dpgossip.index",
                                                                       "dpgossip.modules"}
    groups: dict[str, list[str]] = {}
    for f in sorted((src / "dpgossip").rglob("*.py")):
        if f.name == "__init__.py":
            continue
        name = ".".join(f.relative_to(src).with_suffix("").parts)
        if name in own:
            continue
        parts = name.split(".")
        group = "The package root" if len(parts) == 2 else ".".join(parts[:2])
        groups.setdefault(group, []).append(name)
    order = ["The package root"] + sorted(g for g in groups if g != "The package root")
    out = [HEAD]
    for g in order:
        out.append(f"\n{g}\n{'-' * len(g)}\n")
        for name in sorted(groups[g]):
            out.append(f"\n.. automodule:: {name}\n   :no-members:\n   :no-index:\n")
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not up to date")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        same = PAGE.read_text(encoding="utf-8") == text
        print("docs/api/modules.rst is up to date" if same else "docs/api/modules.rst is stale")
        return 0 if same else 1
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
