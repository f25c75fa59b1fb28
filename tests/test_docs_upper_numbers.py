"""The certified upper bounds printed beside D-DP-PM's lower estimates (scripts/upper_numbers.py).

Every published D-DP-PM point of paper-fig2 x 3 carries its certified upper bound in docs/numbers/
(paper-fig3's and the protocol frontier's come from their runs: tests/test_docs_paper_fig3.py,
tests/test_docs_protocol_frontier.py). These tests check that every point has one, that each lower
estimate (the value of a neighbour a search found: an independent witness) lies below it, that the docs
print the stored values, and recompute a sample of the bounds with the current code: paper-fig2 Wine at
epsilon = 1 (``slow``). The quickstart's bounds are the stored output of its audit
(docs/results/quickstart-audit/, tests/test_docs_numbers.py). The Breast Cancer bounds take 10 to 50 s
each; ``python scripts/upper_numbers.py --check`` recomputes all of them.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


UP = load_script("upper_numbers")
TABLES = load_script("readme_tables")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _round_up(v: float, digits: int) -> str:
    """The oracle of rounding up: the smallest decimal of ``digits`` significant digits whose double is
    not below the double ``v`` (:class:`decimal.Decimal` ceiling of the exact binary value, or the
    decimal one unit below it when that parses to ``v`` itself)."""
    from decimal import ROUND_CEILING, Context, Decimal

    up = Context(prec=digits, rounding=ROUND_CEILING).plus(Decimal(v))
    below = up - Decimal(1).scaleb(up.adjusted() - digits + 1)
    return f"{float(below if float(below) >= v else up):.{digits}g}"


def test_printed_bounds_are_rounded_up():
    for v in (891.387, 1089.72, 999.6, 1.0004e9, 8498401237.7, 1702.87, 66.6, 0.5, 19374.13):
        for digits in (2, 3, 4):
            text = UP.round_up(v, digits)
            assert float(text) >= v and text == _round_up(v, digits), (v, digits, text)


def test_every_published_fig2_point_is_bracketed():
    for ds in UP.FIG2:
        rows = UP.read_csv(UP.NUMBERS / f"paper-fig2-{ds}.csv")
        assert len(rows) == 7
        for r in rows:
            assert all(r[k] for k in TABLES.UPPER_COLUMNS), (ds, r)
            assert float(r["epsilon_at_paper_delta"]) <= float(r["epsilon_upper_at_paper_delta"])
            assert float(r["delta_at_epsilon"]) <= float(r["delta_upper_at_epsilon"]) <= 1.0


def test_what_upper_bound_md_says_of_the_fig2_deltas_is_what_is_stored():
    """docs/upper-bound.md, Section 11: at every published point of paper-fig2 the bound proves no
    delta below 1 (paper-fig3's proven deltas: tests/test_docs_paper_fig3.py)."""
    fig2 = [r["delta_upper_at_epsilon"] for ds in UP.FIG2
            for r in UP.read_csv(UP.NUMBERS / f"paper-fig2-{ds}.csv")]
    assert set(fig2) == {"1"}
    text = _flat((ROOT / "docs" / "upper-bound.md").read_text(encoding="utf-8"))
    assert "On every published point of paper-fig2 the answer is 1" in text


def test_the_docs_print_the_stored_upper_bounds():
    paper = _flat((ROOT / "docs" / "paper.md").read_text(encoding="utf-8"))
    for rows in TABLES.stored().values():
        assert _flat(TABLES.table(rows)) in paper
    assert _flat(TABLES.fig2_upper_sentence(TABLES.stored())) in paper


def test_delta_upper_inverts_a_closed_form_curve():
    """``bound(delta) = ln(1 / delta)``: the delta proven at epsilon is ``e^-epsilon`` exactly."""
    def bound(d: float) -> float:
        return math.log(1.0 / d)

    got = UP.delta_upper(bound, 2.0, 1e-9)
    assert bound(got) <= 2.0 and got == pytest.approx(math.exp(-2.0), rel=1e-6)
    assert UP.delta_upper(bound, 2.0, 0.5) == 0.5  # already proven at the lowest delta given
    assert UP.delta_upper(lambda d: 30.0 + bound(d), 5.0, 0.5) == 1.0  # nothing below 1 proven
    # the screen (one target's bound) above epsilon decides without the full bound
    assert UP.delta_upper(lambda d: 0.0, 5.0, 0.5, screen=lambda d: 6.0) == 1.0


@pytest.mark.slow
def test_the_stored_fig2_bounds_are_what_the_code_certifies():
    """paper-fig2 Wine at epsilon = 1."""
    rows = UP.read_csv(UP.NUMBERS / "paper-fig2-wine.csv")
    assert UP.fig2_row("wine", 0, rows[0]) == {k: rows[0][k] for k in (
        "epsilon_upper_at_paper_delta", "delta_upper_at_epsilon", "upper_reason")}


def test_every_printed_fragment_is_found_so_one_command_rewrites_the_docs():
    """scripts/upper_numbers.py rewrites the pages by replacing each fragment rendered from the old
    numbers with the new one: each must be found on its page (unchanged here)."""
    fragments = UP.doc_fragments()
    assert len(fragments) >= 4
    assert UP.rewrite_docs(fragments, fragments) == []


def test_rewrite_docs_replaces_a_wrapped_fragment(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("before: the bound is\n   66.6 at T = 1, then more.\n", encoding="utf-8")
    missing = UP.rewrite_docs([(page, "the bound is 66.6 at T = 1"), (page, "not there")],
                              [(page, "the bound is 12.5 at T = 1"), (page, "still not there")])
    assert page.read_text(encoding="utf-8") == "before: the bound is 12.5 at T = 1, then more.\n"
    assert missing == ["page.md: not there"]
