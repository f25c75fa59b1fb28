"""Every test file the docs and the README name exists (a moved or renamed test leaves no dangling
citation)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a path like tests/privacy/test_plrv.py; templates such as tests/protocols/test_<home>.py do not match
CITED = re.compile(r"(?<![\w./-])tests/[\w/.-]*?\.py\b")


def _documents() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]


def test_the_citation_pattern_finds_paths_and_skips_templates():
    text = "see `tests/privacy/test_plrv.py::test_x`, tests/a/b.py, and `tests/protocols/test_<home>.py`"
    assert CITED.findall(text) == ["tests/privacy/test_plrv.py", "tests/a/b.py"]


def test_every_cited_test_path_exists():
    cited = {(doc.relative_to(ROOT).as_posix(), path)
             for doc in _documents() for path in CITED.findall(doc.read_text(encoding="utf-8"))}
    assert len(cited) > 50  # the docs cite many tests: a pattern that finds none would prove nothing
    missing = sorted((doc, path) for doc, path in cited if not (ROOT / path).is_file())
    assert not missing, f"cited test files that do not exist: {missing}"
