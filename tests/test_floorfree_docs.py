"""docs/floorfree.md prints the numbers its scripts stored, and its readings hold in those numbers
(recompute: ``python scripts/floorfree_wine.py --check``). docs/cape-gossip.md's table:
tests/test_docs_cape_gossip_views.py."""

import json
from pathlib import Path

import pytest

from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def _stored(name: str) -> dict:
    return json.loads((ROOT / "docs" / "numbers" / f"{name}.json").read_text(encoding="utf-8"))


def test_floorfree_page_prints_the_stored_wine_table_and_its_reading_holds():
    numbers = _stored("floorfree-wine")
    page = (ROOT / "docs" / "floorfree.md").read_text(encoding="utf-8")
    assert load_script("floorfree_wine").table(numbers) in page
    rows = {r["noise_multiplier"]: r for r in numbers["rows"]}
    below = [s for s, r in rows.items() if s > 0 and r["audit"] < 1]
    assert min(below) == 7.0 and rows[5.0]["audit"] >= 1                    # "between s = 5 and s = 7"
    audits = [rows[s]["audit"] for s in sorted(rows) if s > 0]
    assert audits == sorted(audits, reverse=True)
    for s, r in rows.items():
        if s > 0:
            assert r["exact"] and r["audit"] <= r["audit_upper"] <= r["guarantee_gdp"] * (1 + 1e-9)
            assert r["audit_upper"] == pytest.approx(r["guarantee_gdp"], rel=1e-9)   # kappa = 1
            if s >= 3:
                assert 0.55 <= r["audit"] / r["audit_upper"] <= 0.65                # "about 60 %"
    assert f"{rows[1.0]['audit'] / rows[1.0]['audit_upper']:.2f}" == "0.82"
    assert f"{rows[7.0]['error_q']:.3f}" == "0.995" and f"{rows[7.0]['error_u']:.3f}" == "0.948"
    assert f"{numbers['top_eigenvalue']:.1f}" == "22.0"


@pytest.mark.slow
def test_floorfree_wine_numbers_are_what_the_code_computes():
    """About four minutes: the whole Wine table, audits and errors, recomputed."""
    wine = load_script("floorfree_wine")
    _assert_close(json.loads(json.dumps(wine.compute())), _stored("floorfree-wine"))


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


def test_floorfree_wine_row_at_seven_recomputed_but_its_audit():
    """The default suite's part of the Wine table (the slow test above reruns all of it, audits included):
    the row at s = 7, the level the page's reading quotes: its guarantees (GDP, PLD, RDP) and its two
    errors (20 seeds), and the top eigenvalue. About a second."""
    import numpy as np

    from dpgossip.data import load_dataset
    from dpgossip.protocols.ddppm.floorfree import FloorFreeParams
    from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee
    from dpgossip.topology import make_network

    wine = load_script("floorfree_wine")
    numbers = _stored("floorfree-wine")
    data = load_dataset("wine", agents=4)
    assert float(np.linalg.svd(data.X, compute_uv=False)[0] ** 2) == pytest.approx(
        numbers["top_eigenvalue"], rel=1e-9)
    (r,) = [r for r in numbers["rows"] if r["noise_multiplier"] == 7.0]
    params = FloorFreeParams(iterations=wine.T, consensus_steps=wine.C, noise_multiplier=7.0)
    g = floorfree_guarantee(params, wine.DELTA)
    assert (g.epsilon_gdp, g.epsilon_pld, g.epsilon_rdp) == pytest.approx(
        (r["guarantee_gdp"], r["guarantee_pld"], r["guarantee_rdp"]), rel=1e-9)
    errors = wine._errors(data, make_network("paper-ring4"), params)
    assert errors == pytest.approx((r["error_q"], r["error_u"]), rel=1e-9)
