"""docs/floorfree.md quotes docs/privacy.md's example. docs/floorfree.md's Wine table:
tests/test_docs_floorfree_wine.py; docs/cape-gossip.md's table: tests/test_docs_cape_gossip_views.py."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _stored(name: str) -> dict:
    return json.loads((ROOT / "docs" / "numbers" / f"{name}.json").read_text(encoding="utf-8"))


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
