"""docs/cape-gossip.md prints the numbers its script stored, and its readings hold in those numbers
(recompute: ``python scripts/cape_gossip_views.py --check``); docs/floorfree.md quotes docs/privacy.md's
example. docs/floorfree.md's Wine table: tests/test_docs_floorfree_wine.py."""

import json
import math
from pathlib import Path

import pytest

from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def _stored(name: str) -> dict:
    return json.loads((ROOT / "docs" / "numbers" / f"{name}.json").read_text(encoding="utf-8"))


def test_cape_gossip_page_prints_the_stored_table_and_its_reading_holds():
    numbers = _stored("cape-gossip-views")
    page = (ROOT / "docs" / "cape-gossip.md").read_text(encoding="utf-8")
    assert load_script("cape_gossip_views").table(numbers) in page
    rows = {(r["sites"], r["c"]): r for r in numbers["rows"]}
    for (S, c), r in rows.items():
        if c == 1:                                          # a neighbour with one round = the aggregator
            assert r["neighbour"] == pytest.approx(r["cape_aggregator"], rel=1e-9)
        assert r["neighbour"] >= rows[(S, 1)]["neighbour"] - 1e-12
        assert r["coalition"] == pytest.approx(rows[(S, 1)]["coalition"], rel=1e-9)
        assert r["edge"] <= r["all_edges"] + 1e-12 and r["edge"] <= r["neighbour"] + 1e-12
    assert rows[(16, 10)]["neighbour"] > rows[(16, 10)]["cape_aggregator"]
    assert rows[(16, 10)]["edge"] == pytest.approx(rows[(16, 10)]["all_edges"], rel=1e-9)
    assert math.isclose(rows[(4, 5)]["edge"], rows[(4, 5)]["all_edges"], rel_tol=1e-9)


def test_cape_gossip_numbers_are_what_the_code_computes():
    views = load_script("cape_gossip_views")                     # seconds: closed forms per view
    _assert_close(json.loads(json.dumps(views.compute())), _stored("cape-gossip-views"))


def _assert_close(got: object, want: object, rel: float = 1e-9, where: str = "") -> None:
    """Equal structure and strings; floats to ``rel`` (an optimiser's last digits move with the BLAS
    build and the machine, the printed digits must not)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for k in want:
            _assert_close(got[k], want[k], rel, f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_close(g, w, rel, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert got == pytest.approx(want, rel=rel, abs=1e-300), where
    else:
        assert got == want, where


def test_cape_gossip_reading_quotes_the_stored_numbers():
    """docs/cape-gossip.md, "What it shows": the numbers of items 2-4 are the stored table's."""
    rows = {(r["sites"], r["c"]): r for r in _stored("cape-gossip-views")["rows"]}
    page = " ".join((ROOT / "docs" / "cape-gossip.md").read_text(encoding="utf-8").split())
    assert (f"On the 16-ring a neighbour goes from {rows[(16, 1)]['neighbour']:.3g} (`c = 1`) to "
            f"{rows[(16, 10)]['neighbour']:.3g} (`c = 10`), beyond capePCA's aggregator") in page
    assert rows[(16, 10)]["neighbour"] > rows[(16, 10)]["cape_aggregator"]
    assert (f"whatever `c` is: {rows[(4, 1)]['coalition']:.3g} for 4 sites and "
            f"{rows[(16, 1)]['coalition']:.3g} for 16") in page
    assert (f"{rows[(4, 5)]['all_edges']:.3g} on the paper ring, {rows[(16, 10)]['all_edges']:.3g} on the "
            f"16-ring") in page


def test_floorfree_page_quotes_the_privacy_example():
    """docs/floorfree.md quotes the D-DP-PM floor of docs/privacy.md's example (stored in
    docs/numbers/privacy-example.json, recomputed by tests/test_docs_numbers.py's slow test)."""
    example = _stored("privacy-example")
    (row,) = [r for r in example["rows"] if r["view"] == "observer" and r["schedule"] == "constant"
              and r["scale"] == 1.0]
    value = f"{row['epsilon_exact']:.4g}"
    page = " ".join((ROOT / "docs" / "floorfree.md").read_text(encoding="utf-8").split())
    assert f"{value} at delta = 1e-5 on Wine, observer 0 against agent 1" in page
    assert f"{value} or more at every noise level tried" in page
    floor = min(r["epsilon_exact"] for r in example["rows"] if r["view"] == "observer")
    assert f"{floor:.4g}" == value  # "or more at every noise level": constant 1 is the smallest
