"""The numbers printed in docs/ppm.md, docs/cape.md and docs/network-dp.md are those the code computes.

``scripts/protocol_docs_numbers.py`` computes every table and number string of the three pages with the
project's code; these tests recompute them and fail when a page prints something else (whitespace
normalised, as in tests/test_docs_numbers.py). About ten seconds, the 2,048-node hypercube included.
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("protocol_docs_numbers",
                                                  ROOT / "scripts" / "protocol_docs_numbers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NUMBERS = _script()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _doc(page: str) -> str:
    return _flat((ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8"))


PAGES = {
    "ppm": ("ppm_table", "ppm_pld_gap", "ppm_replace_one", "ppm_paper_limit", "ppm_search",
            "ppm_gossip_table", "ppm_gossip_limits"),
    "cape": ("cape_table", "cape_factors"),
    "network-dp": ("network_grid", "network_erdos_renyi", "network_cycle", "hypercube_table",
                   "hypercube_closed_form", "hypercube_antipode"),
}


@pytest.mark.parametrize("page, name", [(p, n) for p, names in PAGES.items() for n in names])
def test_the_page_prints_what_the_code_computes(page, name):
    text = getattr(NUMBERS, name)()
    assert _flat(text) in _doc(page), f"docs/{page}.md differs from {name}():\n{text}"


def test_every_text_function_is_checked():
    listed = {n for names in PAGES.values() for n in names}
    assert set(NUMBERS.ppm_texts.__code__.co_names) >= set(PAGES["ppm"])
    assert set(NUMBERS.cape_texts.__code__.co_names) >= set(PAGES["cape"])
    assert set(NUMBERS.network_texts.__code__.co_names) >= set(PAGES["network-dp"])
    assert len(listed) == sum(len(v) for v in PAGES.values())


def test_the_tables_have_the_printed_shape():
    assert NUMBERS.ppm_table().count("\n") == 1 + len(NUMBERS.PPM_ROWS)
    assert NUMBERS.cape_table().count("\n") == 1 + len(NUMBERS.CAPE_ROWS)
    # the hypercube's antipode: exact Renyi-2 is the local-DP level 1, the authors' sum is far below it
    assert NUMBERS.hypercube_table().splitlines()[-1] == "| 11 | | **1 / 0.0121** |"


def test_main_prints_the_page_asked_for(capsys):
    assert NUMBERS.main(["--cape"]) == 0
    out = capsys.readouterr().out
    assert NUMBERS.cape_table() in out and NUMBERS.cape_factors() in out


def test_the_ppm_table_is_ordered_as_the_page_says():
    # docs/ppm.md: "In every row eps_GDP <= eps_PLD <= eps_RDP <= eps_zCDP"
    for line in NUMBERS.ppm_table().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        zcdp, rdp, pld, gdp = float(cells[6]), float(cells[7].split()[0]), float(cells[8]), float(cells[9])
        assert gdp <= pld <= rdp <= zcdp, line
