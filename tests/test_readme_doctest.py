"""The ``>>>`` examples of README.md (section "Python API") and of the docs pages that hold examples run
and print what the pages show."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# docs pages whose every >>> line is a doctest (the README's other examples moved there)
DOCS_PAGES = [ROOT / "docs" / "python-api.md", ROOT / "docs" / "dynamic-gossip.md"]


@pytest.mark.parametrize("page", [README, *DOCS_PAGES], ids=lambda p: p.name)
def test_examples_run(page):
    result = doctest.testfile(str(page), module_relative=False, report=True,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{page.name} has no >>> examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} {page.name} examples failed"


def test_only_the_python_api_section_has_examples():
    # every >>> line of the README runs; one outside "Python API" would be run by accident
    section = ""
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line
        elif line.lstrip().startswith(">>>"):
            assert section == "## Python API", f"a >>> example outside 'Python API': {line!r}"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_relative_links_of_readme_and_docs_resolve():
    # a page moved or renamed leaves no dead link in README.md or docs/*.md (files and #anchors)
    dead = []
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            linked = (page.parent / path) if path else page
            if not linked.exists():
                dead.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.MULTILINE)
                if anchor not in {_anchor(h) for h in headings}:
                    dead.append(f"{page.name}: {target} (no such heading)")
    assert not dead, dead


def test_readme_is_short_and_its_first_shell_block_is_the_two_ci_commands():
    # .ci/run runs exactly the two lines of the README's first shell block: the main job, then the tests
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"```(bash|sh|shell)", line))
    block = lines[start + 1:lines.index("```", start + 1)]
    assert block == ["python -m pip install . && dpgossip run scenarios/quickstart.toml",
                     'python -m pip install ".[test]" && python -m pytest -q -n 2'], block
