"""The API reference (docs/api/, Sphinx with numpydoc) builds from the docstrings without a warning.

``python -m sphinx -W -b html docs docs/_build/html`` is the build; this test runs it into a temporary
folder (``-W --keep-going``: every warning is reported, and any one fails the build) and also checks
that ``docs/api/modules.rst`` lists every module of the package, so that a new module's docstring is
part of the reference. The tools come with the ``docs`` and ``test`` extras; without them the build is
skipped, saying so.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _missing_tools() -> str | None:
    import importlib.util

    for name in ("sphinx", "numpydoc"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (python -m pip install \".[docs]\")"
    return None


def test_the_modules_page_lists_every_module():
    src = ROOT / "src"
    modules = {".".join(f.relative_to(src).with_suffix("").parts)
               for f in (src / "dpgossip").rglob("*.py") if f.name != "__init__.py"}
    text = (DOCS / "api" / "modules.rst").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\.\. automodule:: (\S+)$", text, flags=re.MULTILINE))
    pages = {p.stem for p in (DOCS / "api").glob("*.rst")} - {"index", "modules"}
    # every module is on the modules page, except errors.py, which has a page of its own
    assert listed | {f"dpgossip.{p}" for p in pages if f"dpgossip.{p}" in modules} == modules, (
        "docs/api/modules.rst does not list every module: python scripts/api_modules_page.py")
    assert len(modules) > 100  # the walk found the package, not an empty folder


@pytest.mark.skipif(_missing_tools() is not None, reason=_missing_tools() or "")
def test_the_api_reference_builds_without_warnings(tmp_path):
    warnings = tmp_path / "warnings.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), "-w", str(warnings), str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, env=env, timeout=300)
    reported = warnings.read_text(encoding="utf-8") if warnings.exists() else ""
    assert proc.returncode == 0 and not reported.strip(), (
        f"sphinx exited {proc.returncode}:\n{reported}{proc.stderr[-3000:]}")
    page = (tmp_path / "html" / "api" / "privacy.html").read_text(encoding="utf-8")
    # the public names are there, with their numpydoc sections rendered
    assert 'id="dpgossip.privacy.GaussianPair"' in page and "Parameters" in page
