"""Every upper bound the docs print from a number stored at full precision is printed at or above it
(rounded up by :func:`dpgossip.rounding.format_upper`): the pairwise-leakage bounds by hop distance and
their sentence (docs/results.md, docs/privacy.md; docs/results/pairwise-leakage/) and docs/floorfree.md's
certified upper end and guarantees (docs/results/floorfree-wine*/). The printed text is parsed back and
compared with the stored values; other tests check that the docs print exactly these tables
(docs/privacy.md's example prints its bounds with the same function: tests/test_docs_privacy_example.py)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_pairwise_leakage_bounds_by_hop_are_printed_at_or_above_every_pairs_bound():
    from tests.test_docs_pairwise_leakage import (
        leakage_by_hops,
        leakage_pairs,
        published_lower,
        upper_sentence,
    )

    pairs = leakage_pairs()
    ratio = {(p["observer"], p["target"]): float(p["epsilon_upper"]) / published_lower(p) for p in pairs}
    rows = leakage_by_hops(pairs)
    for row in rows:
        mine = [p for p in pairs if p["hops"] == row["hops"]]
        up = [float(p["epsilon_upper"]) for p in mine]
        assert float(row["upper_min"]) >= min(up) and float(row["upper_max"]) >= max(up), row
        assert float(row["gap_max"]) >= max(ratio[(p["observer"], p["target"])] for p in mine), row
    sentence = upper_sentence(rows)
    (said,) = re.findall(r"from (\S+) to (\S+) \(rounded up; upper / lower at most (\S+)\)", sentence)
    low, high, gap = map(float, said)
    bounds = [float(p["epsilon_upper"]) for p in pairs]
    assert low >= min(bounds) and high >= max(bounds) and gap >= max(ratio.values())


def test_floorfree_prints_its_certified_end_and_guarantees_at_or_above_the_stored_ones():
    from tests.test_docs_floorfree_wine import GUARANTEES, wine_rows, wine_table

    rows = wine_rows()
    lines = wine_table(rows).splitlines()
    keys = {2: "audit_upper", **{3 + i: key for i, key in enumerate(GUARANTEES)}}
    checked = 0
    for r, line in zip(rows, lines[2:], strict=True):
        if r["noise_multiplier"] == 0:
            continue
        cells = _cells(line)
        for i, key in keys.items():
            assert float(cells[i]) >= r[key], (r["noise_multiplier"], key, cells[i], r[key])
            checked += 1
    assert checked == 4 * (len(rows) - 1)
