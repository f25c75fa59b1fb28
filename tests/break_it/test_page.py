"""``docs/break-it.md`` is the page generated from the break-it table."""

from pathlib import Path

from tests.break_it.page import page

DOC = Path(__file__).resolve().parents[2] / "docs" / "break-it.md"


def test_the_page_is_the_generated_table() -> None:
    assert DOC.read_text(encoding="utf-8") == page(), (
        "docs/break-it.md differs from the cases: python -m tests.break_it.page > docs/break-it.md")
