"""The ``>>>`` examples of README.md (section "Python API") run and print what the README shows."""

from __future__ import annotations

import doctest
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_run():
    result = doctest.testfile(str(README), module_relative=False, report=True,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, "README.md has no >>> examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} README examples failed"


def test_only_the_python_api_section_has_examples():
    # every >>> line of the README runs; one outside "Python API" would be run by accident
    section = ""
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line
        elif line.lstrip().startswith(">>>"):
            assert section == "## Python API", f"a >>> example outside 'Python API': {line!r}"
