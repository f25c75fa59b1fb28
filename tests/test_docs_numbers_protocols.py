"""The numbers printed in docs/ppm.md, docs/cape.md and docs/network-dp.md are those the code computes.

``scripts/protocol_docs_numbers.py`` computes every table and number string of the three pages with the
project's code; these tests recompute them and fail when a page prints something else (whitespace
normalised, as in tests/test_docs_numbers.py). About ten seconds, the 2,048-node hypercube included.
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
    "ppm": ("ppm_table", "ppm_pld_gap", "ppm_replace_one", "ppm_paper_limit", "ppm_search",
            "ppm_gossip_table", "ppm_gossip_limits"),
    "cape": ("cape_table", "cape_factors", "cape_nominal"),
    "network-dp": ("network_grid", "network_erdos_renyi", "network_cycle", "hypercube_table",
                   "hypercube_closed_form", "hypercube_antipode", "muffliato_forms_table",
                   "muffliato_forms_reading"),
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


def test_the_cape_aggregator_passes_the_nominal_epsilon_where_the_page_says():
    """docs/cape.md, Section 5: at Imtiaz and Sarwate's sensitivity and calibration the aggregator's
    exact epsilon is below the nominal one at eps = 0.1 for every S, and above it from S = 19 at 0.5
    and from S = 7 at 0.9.
    Checked on ``cape_guarantee`` directly, on both sides of each threshold, and against the 2S/(S+1)
    closed form of the joint view (sqrt(2S/(S+1)) times the site's mu)."""
    from dpgossip.protocols.cape.guarantee import cape_guarantee, gaussian_epsilon

    def agg(eps: float, S: int):
        return cape_guarantee((NUMBERS.CAPE_ROWS_PER_SITE,) * S, NUMBERS._cape_paper_params(eps),
                              NUMBERS.CAPE_DELTA, adjacency="paper")

    for eps, first in ((0.5, 19), (0.9, 7)):
        assert NUMBERS.cape_nominal_sites(eps) == first
        before, at = agg(eps, first - 1), agg(eps, first)
        assert before.epsilon_aggregator <= eps < at.epsilon_aggregator
        factor = 2 * first / (first + 1)
        assert at.epsilon_aggregator == pytest.approx(
            gaussian_epsilon(at.mu_site * factor ** 0.5, NUMBERS.CAPE_DELTA), rel=1e-9)
    assert NUMBERS.cape_nominal_sites(0.1) is None
    assert agg(0.1, 10_000).epsilon_aggregator < NUMBERS.cape_nominal_limit(0.1) < 0.1
    assert agg(0.9, 100).epsilon_aggregator > 0.9  # the table's last row


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
