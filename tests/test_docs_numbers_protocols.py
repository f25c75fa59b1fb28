"""The two result tables of docs/network-dp.md, Section 4, are those the code computes (its worked numbers:
tests/test_docs_network_dp_derivations.py; docs/ppm.md: tests/test_docs_ppm.py; docs/cape.md:
tests/test_docs_cape.py).

``scripts/protocol_docs_numbers.py`` computes the hypercube table and the table of Muffliato's forms
(and its reading) with the project's code; these tests recompute them and fail when the page prints
something else (whitespace normalised, as in tests/test_docs_numbers.py). About ten seconds, the
2,048-node hypercube included.
"""

from pathlib import Path

import pytest

from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


NUMBERS = load_script("protocol_docs_numbers")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _doc(page: str) -> str:
    return _flat((ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8"))


PAGES = {
    "network-dp": ("hypercube_table", "muffliato_forms_table", "muffliato_forms_reading"),
}


@pytest.mark.parametrize("page, name", [(p, n) for p, names in PAGES.items() for n in names])
def test_the_page_prints_what_the_code_computes(page, name):
    text = getattr(NUMBERS, name)()
    assert _flat(text) in _doc(page), f"docs/{page}.md differs from {name}():\n{text}"


def test_every_text_function_is_checked():
    listed = {n for names in PAGES.values() for n in names}
    assert set(NUMBERS.network_texts.__code__.co_names) >= set(PAGES["network-dp"])
    assert len(listed) == sum(len(v) for v in PAGES.values())


def test_the_tables_have_the_printed_shape():
    # the hypercube's antipode: exact Renyi-2 is the local-DP level 1, the authors' sum is far below it
    assert NUMBERS.hypercube_table().splitlines()[-1] == "| 11 | | **1 / 0.0121** |"


def test_main_prints_the_page_asked_for(capsys):
    assert NUMBERS.main([]) == 0
    out = capsys.readouterr().out
    assert NUMBERS.hypercube_table() in out


def test_the_muffliato_forms_reading_holds_in_its_rows():
    """docs/network-dp.md, Section 4, MFDL's graph: the NeurIPS sum falls below the exact value at some
    targets, the corrected form (both powers) and MFDL's bound never, and the clip binds."""
    rows = NUMBERS.muffliato_forms_rows()
    assert len(rows) == 99
    assert any(r["neurips"] < r["exact_once"] * (1 - 1e-9) for r in rows)
    for r in rows:
        for key in ("corrected", "corrected_p2", "mfdl"):
            assert r[key] >= r["exact_every"] * (1 - 1e-9), (key, r)
        assert r["corrected"] == pytest.approx(min(r["corrected_unclipped"], 10.0), rel=1e-12)
        assert r["corrected_p2"] <= r["corrected"] * (1 + 1e-12)  # p = 2 is the smaller
