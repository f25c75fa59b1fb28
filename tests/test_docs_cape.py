"""docs/cape.md, Section 5: the table from the stored results of the shipped scenario
cape-classical-calibration, and the worked numbers of the joint view computed here.

docs/results/cape-classical-calibration/ holds ``runs.csv`` and ``config.resolved.json`` of :data:`COMMAND`
(``dpgossip run`` of the scenario into that folder, ``--no-plots``).

The table (every epsilon rounded up to four decimals) is rendered from the stored rows; the point
``eps = 0.9``, ``S = 4`` under row replacement is run again (about a second) and its row compared with the
stored one character for character; the slow test reruns the command and compares the stored files byte
for byte. The worked numbers of the section (the factor ``2S/(S+1)`` at ``S = 2, 4``, and the number of
sites from which the aggregator's exact epsilon passes the nominal one) are computed here from
:func:`dpgossip.protocols.cape.guarantee.view_factor` and
:func:`dpgossip.protocols.cape.guarantee.cape_guarantee`: this test is their oracle.
"""

from __future__ import annotations

import csv
import json
import math
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from dpgossip.protocols.cape.guarantee import cape_guarantee, gaussian_epsilon, view_factor
from dpgossip.protocols.cape.star import CapeParams
from tests.stored_results import assert_run_writes_stored

ROOT = Path(__file__).resolve().parents[1]
NAME = "cape-classical-calibration"
SCENARIO = ROOT / "scenarios" / f"{NAME}.toml"
RESULTS = ROOT / "docs" / "results" / NAME
STORED = ("runs.csv", "config.resolved.json")
COMMAND = f"dpgossip run scenarios/{NAME}.toml --out docs/results/{NAME} --no-plots"
DELTA, ROWS_PER_SITE = 1e-5, 100
SETTINGS = ((0.1, 2), (0.5, 4), (0.9, 4), (0.9, 100))
"""The table's (eps, S), in its order."""


def _flat(text: str) -> str:
    return " ".join(text.split())


def _page() -> str:
    return (ROOT / "docs" / "cape.md").read_text(encoding="utf-8")


def up(value: float, places: int = 4) -> str:
    """``value`` with ``places`` decimals rounded **up** (a guarantee never printed below itself)."""
    return str(Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_CEILING))


def classical_multiplier(eps: float) -> float:
    """Imtiaz and Sarwate's classical Gaussian calibration for ``eps`` at their sensitivity ``1/N``."""
    return math.sqrt(2 * math.log(1.25 / DELTA)) / eps


def read_rows(folder: Path = RESULTS) -> list[dict[str, str]]:
    with open(folder / "runs.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def by_setting(rows: list[dict[str, str]]) -> dict[tuple[float, int], dict[str, dict[str, str]]]:
    """``{(eps, S): {"paper": row, "row-replacement": row}}``; ``eps`` is the paper row's
    ``claimed_epsilon`` (Imtiaz and Sarwate's claim at their calibration), in the rows' order."""
    pairs: dict[int, dict[str, dict[str, str]]] = {}
    for r in rows:
        pairs.setdefault(int(r["point"]) // 2, {})[r["sensitivity"]] = r
    return {(float(p["paper"]["claimed_epsilon"]), int(p["paper"]["agents"])): p for p in pairs.values()}


def table(rows: list[dict[str, str]]) -> str:
    """The markdown table of docs/cape.md, Section 5."""
    lines = ["| eps (classical calibration) | S | site, Imtiaz and Sarwate's `1/N` "
             "| aggregator, Imtiaz and Sarwate's `1/N` | site, row replacement "
             "| aggregator, row replacement |", "|---|---|---|---|---|---|"]
    for (eps, S), pair in by_setting(rows).items():
        cells = [up(float(pair[s][k])) for s in ("paper", "row-replacement")
                 for k in ("site_epsilon", "guaranteed_epsilon")]
        lines.append(f"| {eps:g} | {S} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _paper_guarantee(eps: float, S: int):
    params = CapeParams(k=1, noise_multiplier=classical_multiplier(eps), sensitivity="paper")
    return cape_guarantee((ROWS_PER_SITE,) * S, params, DELTA, adjacency="paper")


def nominal_limit(eps: float) -> float:
    """The aggregator's exact epsilon as ``S`` grows (factor ``2S/(S+1) -> 2``), at Imtiaz and Sarwate's
    sensitivity and calibration."""
    return gaussian_epsilon(math.sqrt(2.0) * _paper_guarantee(eps, 2).mu_site, DELTA)


def nominal_sites(eps: float) -> int | None:
    """The smallest ``S`` at which the aggregator's exact epsilon exceeds ``eps`` (None when it never
    does: it grows with ``S`` towards :func:`nominal_limit`)."""
    if nominal_limit(eps) <= eps:
        return None
    S = 2
    while _paper_guarantee(eps, S).epsilon_aggregator <= eps:
        S += 1
    return S


def test_the_page_prints_the_stored_table_and_names_the_command():
    rows = read_rows()
    assert table(rows) in _page()
    assert COMMAND in _flat(_page())
    readme = (ROOT / "docs" / "results" / "README.md").read_text(encoding="utf-8")
    assert f"`{NAME}/`: `{COMMAND}`" in readme
    last = by_setting(rows)[SETTINGS[-1]]["paper"]
    assert (f"({up(float(last['guaranteed_epsilon']))} against 0.9 at `S = 100` in the table)"
            in _flat(_page()))


def test_the_stored_results_are_the_shipped_scenario_s():
    """The configuration as the scenario file resolves now, every point ok, 100 rows per site, the
    classical multiplier at sensitivity 1/N and the same noise tau under row replacement."""
    from dpgossip.scenario import load_scenario

    scenario = load_scenario(SCENARIO)
    stored = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(scenario.config))
    rows = read_rows()
    assert len(rows) == len(scenario.points()) == 8 and {r["status"] for r in rows} == {"ok"}
    assert list(by_setting(rows)) == list(SETTINGS)
    for (eps, S), pair in by_setting(rows).items():
        paper, row = pair["paper"], pair["row-replacement"]
        assert float(paper["noise_multiplier"]) == pytest.approx(classical_multiplier(eps), rel=1e-12)
        assert float(row["noise_multiplier"]) == pytest.approx(classical_multiplier(eps) / math.sqrt(2),
                                                               rel=1e-12)
        for r in (paper, row):
            assert int(r["n"]) == ROWS_PER_SITE * S and float(r["guarantee_delta"]) == DELTA


def test_the_reading_holds_in_the_stored_rows():
    """Exact epsilons: the aggregator is the site's mu times sqrt(2S/(S + 1)); row replacement is the
    same noise at sqrt(2) times the sensitivity; at S = 100 and eps = 0.9 the aggregator passes eps at
    Imtiaz and Sarwate's sensitivity, and under row replacement already at eps = 0.1, S = 2."""
    by = by_setting(read_rows())
    for (eps, S), pair in by.items():
        paper, row = pair["paper"], pair["row-replacement"]
        mu_site = 1 / classical_multiplier(eps)
        assert float(paper["site_epsilon"]) == pytest.approx(gaussian_epsilon(mu_site, DELTA), rel=1e-9)
        assert float(row["site_epsilon"]) == pytest.approx(
            gaussian_epsilon(math.sqrt(2) * mu_site, DELTA), rel=1e-9)
        for r, mu in ((paper, mu_site), (row, math.sqrt(2) * mu_site)):
            assert float(r["guaranteed_epsilon"]) == pytest.approx(
                gaussian_epsilon(math.sqrt(view_factor(S)) * mu, DELTA), rel=1e-9)
    assert float(by[(0.9, 100)]["paper"]["guaranteed_epsilon"]) > 0.9
    assert float(by[(0.1, 2)]["row-replacement"]["guaranteed_epsilon"]) > 0.1


def test_the_page_prints_the_worked_numbers_of_the_joint_view():
    """The factor 2S/(S+1) at S = 2 and 4, and where the aggregator's exact epsilon passes the nominal
    one at Imtiaz and Sarwate's sensitivity and calibration: checked on both sides of each threshold."""
    page = _flat(_page())
    two, four = view_factor(2), view_factor(4)
    assert (f"`2S/(S+1)`: `{Fraction(two).limit_denominator(10)}` for `S = 2`, `{four:g}` for `S = 4`, "
            "and towards `2` for many sites.") in page
    assert nominal_sites(0.1) is None and nominal_limit(0.1) < 0.1
    assert (f"at `eps = 0.1` it stays below `0.1` for every `S` (it tends to `{up(nominal_limit(0.1))}` "
            "as `S` grows)") in page
    firsts = {eps: nominal_sites(eps) for eps in (0.5, 0.9)}
    for eps, first in firsts.items():
        before, at = _paper_guarantee(eps, first - 1), _paper_guarantee(eps, first)
        assert before.epsilon_aggregator <= eps < at.epsilon_aggregator
    assert (f"it exceeds the nominal epsilon at `eps = 0.5` from `S = {firsts[0.5]}` and at `eps = 0.9` "
            f"from `S = {firsts[0.9]}` on") in page


def test_one_point_is_what_the_run_computes(tmp_path):
    """eps = 0.9, S = 4 under row replacement run alone: its row is the stored one, every column the run
    writes but the point's index, character for character."""
    from dpgossip.scenario import load_scenario, run_scenario

    config = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))
    scenario = load_scenario(SCENARIO).with_overrides({
        "data.synthetic": config["data"]["synthetic"][5], "network.agents": 4,
        "cape.noise_multiplier": config["cape"]["noise_multiplier"][5],
        "cape.sensitivity": "row-replacement", "sweep.zip": []})
    assert len(scenario.points()) == 1
    (fresh,) = read_rows(run_scenario(scenario, tmp_path / "point", quiet=True))
    stored = read_rows()[5]
    columns = [k for k in fresh if k != "point"]
    assert {"site_epsilon", "guaranteed_epsilon"} <= set(columns) <= set(stored)
    assert {k: fresh[k] for k in columns} == {k: stored[k] for k in columns}


@pytest.mark.slow
def test_the_scenario_rerun_writes_the_stored_files(tmp_path):
    """The whole scenario again with the command the page names (seconds): the stored files byte for
    byte."""
    assert_run_writes_stored(SCENARIO, tmp_path / NAME, RESULTS, STORED)
