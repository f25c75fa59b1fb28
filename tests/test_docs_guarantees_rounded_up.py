"""Guarantees printed by the pages (docs/ppm.md, docs/cape.md) and by the protocol comparison's rendering
(tests/test_docs_protocol_comparison.py; the protocol frontier's: tests/test_docs_protocol_frontier.py)
read back at or above the values computed, and less than one unit of their last printed digit above
(rounded up, not to nearest). The values are recomputed here by the accountants and guarantees
themselves, not taken from the pages' stored results."""

import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rounded_up(text: str, value: float) -> bool:
    """``text`` reads back at or above ``value`` and less than one unit of its last digit above it."""
    places = len(text.split(".")[1]) if "." in text else 0
    return float(text) >= value and float(text) - 10.0 ** -places < value


def test_ppm_table_prints_every_accountant_epsilon_rounded_up():
    """docs/ppm.md, Section 4: every accountant's epsilon of the results table (stored run of
    ppm-accountants) and the epsilon of Nicolas et al.'s calibration (worked numbers), recomputed here
    by the accountants for the row's budget."""
    from dpgossip.privacy.accountant import (
        calibrate_zcdp_noise,
        composition_guarantee,
        paper_noise_multiplier,
        zcdp_rho,
        zcdp_to_epsilon,
    )

    accountings = _page_table_rows("ppm", "| eps | delta | L | sigma_cal |")
    papers = _page_table_rows("ppm", "| eps | delta | L | sigma_paper |")
    assert len(accountings) == len(papers) == 4
    for cells, paper_cells in zip(accountings, papers, strict=True):
        eps, delta, L = float(cells[0]), float(cells[1]), int(cells[2])
        assert paper_cells[:3] == cells[:3]
        g = composition_guarantee([calibrate_zcdp_noise(eps, delta, L)] * L, delta)
        paper = zcdp_to_epsilon(zcdp_rho([paper_noise_multiplier(eps, delta, L)] * L), delta)
        printed = [cells[5], cells[6].split()[0], cells[7], cells[8], paper_cells[4]]
        for text, value in zip(printed, (g.epsilon_zcdp, g.epsilon_rdp, g.epsilon_pld, g.epsilon_gdp,
                                         paper), strict=True):
            assert _rounded_up(text, value), (eps, text, value)


def _page_table_rows(page: str, header: str) -> list[list[str]]:
    """The cells of the body rows of the markdown table of ``docs/<page>.md`` whose header starts with
    ``header``."""
    lines = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    body = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        body.append([c.strip() for c in line.strip().strip("|").split("|")])
    return body


def test_cape_table_prints_every_exact_epsilon_rounded_up():
    """docs/cape.md, Section 5 (stored results of cape-classical-calibration): every exact epsilon of the
    page's table, recomputed here by ``cape_guarantee`` for the row's classical calibration."""
    from dpgossip.protocols.cape.guarantee import cape_guarantee
    from dpgossip.protocols.cape.star import CapeParams

    rows = _page_table_rows("cape", "| eps (classical calibration) |")
    assert len(rows) == 4
    for cells in rows:
        eps, S = float(cells[0]), int(cells[1])
        params = CapeParams(k=1, noise_multiplier=math.sqrt(2 * math.log(1.25 / 1e-5)) / eps,
                            sensitivity="paper")
        paper = cape_guarantee((100,) * S, params, 1e-5, adjacency="paper")
        row = cape_guarantee((100,) * S, params, 1e-5)
        for text, value in zip(cells[2:], (paper.epsilon_site, paper.epsilon_aggregator, row.epsilon_site,
                                           row.epsilon_aggregator), strict=True):
            assert _rounded_up(text, value), (eps, S, text, value)


def test_comparison_rounds_a_guarantee_up():
    from tests.stored_results import fmt_upper

    for fmt in (fmt_upper,):
        assert fmt(0.74163701) == "0.742" and fmt(0.742) == "0.742" and fmt(8.5600001) == "8.57"
        assert fmt(math.nan) == "" and fmt(math.inf) == "inf"


def test_ppm_replace_one_sentence_prints_both_epsilons_rounded_up():
    """docs/ppm.md, Section 4: the PLD accountant's REPLACE_ONE epsilon and the right one (the Gaussian
    mechanism's exact epsilon at sigma = 2), each read back at or above its value."""
    import re

    from dp_accounting import GaussianDpEvent, NeighboringRelation, get_epsilon_gaussian
    from dp_accounting.pld import PLDAccountant

    page = " ".join((ROOT / "docs" / "ppm.md").read_text(encoding="utf-8").split())
    wrong_text, right_text = re.search(r"`delta = 1e-5` it gives ([0-9.]+) where the right value is "
                                       r"([0-9.]+)\.", page).groups()
    acc = PLDAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE,
                        value_discretization_interval=1e-4)
    acc.compose(GaussianDpEvent(noise_multiplier=2.0))
    assert _rounded_up(wrong_text, float(acc.get_epsilon(1e-5)))
    assert _rounded_up(right_text, float(get_epsilon_gaussian(2.0, 1e-5)))
