"""docs/ppm.md prints the stored results of the shipped scenarios ppm-accountants and ppm-gossip-masks,
and worked numbers computed here.

Results (docs/results/<name>/: ``runs.csv`` and ``config.resolved.json`` of :data:`COMMANDS`):

* Section 4, the calibrated noise and its four accountings, one row per budget (ppm-accountants);
* Section 7, the worst single agent's ``mu`` of ppm-gossip on a 16-ring over the central one
  (ppm-gossip-masks).

Both tables are rendered from the stored rows (guarantees rounded up); one point of each scenario is run
again and its row compared with the stored one character for character; the slow test reruns both
commands and compares the stored files byte for byte.

Worked numbers (closed forms and a seeded search that illustrate the page's maths; this test is their
oracle, computed from the library's public functions): Nicolas et al.'s calibration ``sigma_paper`` and
the epsilon its noise reaches, the REPLACE_ONE pitfall of the PLD accountant, the corrected threshold of
Section 5, item 1, the seeded search of Section 3, and the two limits of the ppm-gossip table.
"""

from __future__ import annotations

import csv
import json
import math
import re
from decimal import ROUND_CEILING, Decimal
from pathlib import Path

import numpy as np
import pytest

from dpgossip.privacy.accountant import (
    paper_epsilon_limit,
    paper_noise_multiplier,
    zcdp_rho,
    zcdp_to_epsilon,
)
from dpgossip.rounding import format_upper

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
RESULTS = ROOT / "docs" / "results"
ACCOUNTANTS, GOSSIP = "ppm-accountants", "ppm-gossip-masks"
COMMANDS = {name: f"dpgossip run scenarios/{name}.toml --out docs/results/{name} --no-plots"
            for name in (ACCOUNTANTS, GOSSIP)}
STORED = ("runs.csv", "config.resolved.json")
MASKS = (0.0, 1.0, 10.0, 100.0)
"""The mask stds ``tau`` of the ppm-gossip table's columns, in its order."""


def _flat(text: str) -> str:
    return " ".join(text.split())


def _page() -> str:
    return _flat((ROOT / "docs" / "ppm.md").read_text(encoding="utf-8"))


def up(value: float, places: int) -> str:
    """``value`` with ``places`` decimals rounded **up** (a guarantee never printed below itself)."""
    return str(Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_CEILING))


def power_of_ten(x: float) -> str:
    """A power of ten as the page prints it: ``1e-5``."""
    text = re.sub(r"e(-?)0*(\d)", r"e\1\2", f"{x:.0e}")
    assert float(text) == x, x
    return text


def read_rows(name: str, folder: Path | None = None) -> list[dict[str, str]]:
    with open((folder or RESULTS / name) / "runs.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def accountants_table(rows: list[dict[str, str]]) -> str:
    """The table of docs/ppm.md, Section 4 (the multiplier and rho to nearest: not guarantees)."""
    lines = ["| eps | delta | L | sigma_cal | rho | eps zCDP | eps RDP (order) | eps PLD | eps GDP |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = {k: float(r[k]) for k in ("ppm_epsilon", "ppm_delta", "noise_multiplier", "zcdp_rho",
                                      "zcdp_epsilon", "rdp_epsilon", "rdp_order",
                                      "guaranteed_epsilon", "gdp_epsilon")}
        lines.append(f"| {f['ppm_epsilon']:g} | {power_of_ten(f['ppm_delta'])} | {r['iterations']} "
                     f"| {f['noise_multiplier']:.4f} | {f['zcdp_rho']:.5f} | {up(f['zcdp_epsilon'], 9)} "
                     f"| {up(f['rdp_epsilon'], 6)} ({f['rdp_order']:g}) "
                     f"| {up(f['guaranteed_epsilon'], 6)} | {up(f['gdp_epsilon'], 6)} |")
    return "\n".join(lines)


def pld_gap(rows: list[dict[str, str]]) -> str:
    """The sentence after the table: the PLD's largest distance to the exact GDP value, rounded up to
    one significant digit."""
    gap = max(abs(float(r["guaranteed_epsilon"]) - float(r["gdp_epsilon"])) for r in rows)
    mantissa, exponent = format_upper(gap, 1).split("e")
    return f"The PLD is within `{mantissa}e{int(exponent)}` of the exact GDP value here."


def paper_table(rows: list[dict[str, str]]) -> str:
    """Worked numbers: Nicolas et al.'s ``sigma_paper = sqrt(4 L ln(1/delta))/eps`` for the budgets of
    the results table, and the zCDP epsilon its noise reaches (rounded up)."""
    lines = ["| eps | delta | L | sigma_paper | eps zCDP of sigma_paper |", "|---|---|---|---|---|"]
    for r in rows:
        eps, delta, L = float(r["ppm_epsilon"]), float(r["ppm_delta"]), int(r["iterations"])
        paper = paper_noise_multiplier(eps, delta, L)
        assert paper == pytest.approx(math.sqrt(4 * L * math.log(1 / delta)) / eps, rel=1e-12)
        reached = zcdp_to_epsilon(zcdp_rho([paper] * L), delta)
        lines.append(f"| {eps:g} | {power_of_ten(delta)} | {L} | {paper:.4f} | {up(reached, 6)} |")
    return "\n".join(lines)


def gossip_table(rows: list[dict[str, str]]) -> str:
    """The table of docs/ppm.md, Section 7: worst single agent's mu over the central sqrt(L)/sigma (an
    exact ratio, printed to nearest)."""
    ratio: dict[int, dict[float, float]] = {}
    for r in rows:
        central = math.sqrt(int(r["iterations"])) / float(r["noise_multiplier"])
        ratio.setdefault(int(r["consensus_steps"]), {})[float(r["mask_std"])] = \
            float(r["audited_mu_beyond"]) / central
    lines = ["| c | " + " | ".join(f"tau = {t:g}" for t in MASKS) + " |", "|---|" + "---|" * len(MASKS)]
    for c, by_tau in ratio.items():
        lines.append(f"| {c} | " + " | ".join(f"{by_tau[t]:.4f}" for t in MASKS) + " |")
    return "\n".join(lines)


def test_the_page_prints_the_stored_accountings_and_names_the_command():
    rows, page = read_rows(ACCOUNTANTS), _page()
    assert _flat(accountants_table(rows)) in page
    assert pld_gap(rows) in page
    assert COMMANDS[ACCOUNTANTS] in page


def test_the_stored_accountings_hold_what_the_page_says():
    """The configuration as the scenario resolves now; eps_GDP <= eps_PLD <= eps_RDP <= eps_zCDP in every
    row; zCDP is the budget (the calibration inverts it); rho = L / (2 sigma^2)."""
    from dpgossip.scenario import load_scenario

    scenario = load_scenario(SCENARIOS / f"{ACCOUNTANTS}.toml")
    stored = json.loads((RESULTS / ACCOUNTANTS / "config.resolved.json").read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(scenario.config))
    rows = read_rows(ACCOUNTANTS)
    assert len(rows) == len(scenario.points()) == 4 and {r["status"] for r in rows} == {"ok"}
    for r in rows:
        f = {k: float(r[k]) for k in r if k.endswith("epsilon") or k in ("zcdp_rho", "noise_multiplier")}
        assert f["gdp_epsilon"] <= f["guaranteed_epsilon"] <= f["rdp_epsilon"] <= f["zcdp_epsilon"]
        assert f["zcdp_epsilon"] == pytest.approx(f["ppm_epsilon"], rel=1e-12)
        assert f["zcdp_rho"] == pytest.approx(int(r["iterations"]) / (2 * f["noise_multiplier"] ** 2),
                                              rel=1e-9)


def test_the_page_prints_the_stored_gossip_table_and_names_the_command():
    rows, page = read_rows(GOSSIP), _page()
    assert _flat(gossip_table(rows)) in page
    assert COMMANDS[GOSSIP] in page
    readme = (RESULTS / "README.md").read_text(encoding="utf-8")
    for name, command in COMMANDS.items():
        assert f"`{name}/`: `{command}`" in readme


def test_the_stored_gossip_audits_hold_what_the_page_says():
    """The configuration as the scenario resolves now; the sum's view is the central Gaussian
    mechanism at every point; without masks a neighbour sees sqrt(s) times the central mu; from c = 8
    (the ring's radius) on, the worst agent stays above the central value, above sqrt(s/(s-1)) times
    it for every finite tau; with c <= 4 and large masks it is below."""
    from dpgossip.scenario import load_scenario

    scenario = load_scenario(SCENARIOS / f"{GOSSIP}.toml")
    stored = json.loads((RESULTS / GOSSIP / "config.resolved.json").read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(scenario.config))
    rows = read_rows(GOSSIP)
    assert len(rows) == len(scenario.points()) == 16 and {r["status"] for r in rows} == {"ok"}
    s = 16
    for r in rows:
        central = math.sqrt(int(r["iterations"])) / float(r["noise_multiplier"])
        c, tau, worst = int(r["consensus_steps"]), float(r["mask_std"]), float(r["audited_mu_beyond"])
        assert int(r["agents"]) == s and float(r["audited_mu"]) == pytest.approx(central, rel=1e-9)
        if tau == 0:
            assert worst == pytest.approx(math.sqrt(s) * central, rel=1e-9)
        if c >= 8:
            assert worst > math.sqrt(s / (s - 1)) * central
        if c <= 4 and tau >= 10:
            assert worst < central


def test_the_page_prints_the_worked_numbers():
    """Nicolas et al.'s calibration for the same budgets, the corrected threshold of Section 5, item 1,
    and the two limits of the ppm-gossip table, computed here."""
    page = _page()
    assert _flat(paper_table(read_rows(ACCOUNTANTS))) in page
    eps = 4 * math.log(1e4)
    reached = zcdp_to_epsilon(zcdp_rho([paper_noise_multiplier(eps, 1e-4, 3)] * 3), 1e-4)
    assert reached > eps
    assert _flat(
        f"`eps <= 8 (1 - 1/sqrt(2)) ln(1/delta)`, about `{8 * (1 - 1 / math.sqrt(2)):.2f} ln(1/delta)` "
        f"({paper_epsilon_limit(1e-4):.2f} at `delta = 1e-4`), not when `eps <= 4 ln(1/delta)`, the "
        f"condition stated as `delta <= exp(-eps/4)`. Between the two thresholds the paper's noise does "
        f"not give the claimed guarantee. At `eps = 4 ln(1/delta) = {eps:.1f}`, for example, it gives "
        f"`eps' = {up(reached, 1)}` (tested).") in page
    s = 16
    assert (f"`sqrt(s) = {math.sqrt(s):.4f}` without masks, and `sqrt(s/(s-1)) = "
            f"{math.sqrt(s / (s - 1)):.4f}` once a single agent's view contains the sum") in page


def test_the_page_prints_the_replace_one_pitfall_rounded_up():
    """Section 4: the PLD accountant under REPLACE_ONE counts a replacement twice; both epsilons printed
    rounded up."""
    from dp_accounting import GaussianDpEvent, NeighboringRelation, get_epsilon_gaussian
    from dp_accounting.pld import PLDAccountant

    acc = PLDAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE,
                        value_discretization_interval=1e-4)
    acc.compose(GaussianDpEvent(noise_multiplier=2.0))
    wrong, right = float(acc.get_epsilon(1e-5)), float(get_epsilon_gaussian(2.0, 1e-5))
    assert wrong > 2 * right
    assert (f"at `sigma = 2`, `delta = 1e-5` it gives {format_upper(wrong, 4)} where the right value is "
            f"{format_upper(right, 4)}.") in _page()


def test_the_page_prints_the_seeded_search_of_the_replacement_sensitivity():
    """Section 3: a seeded random search over unit vectors near range(V) (d = 6, p = 3, 4,000 pairs, as
    tests/protocols/ppm/test_central.py draws V) approaches sqrt(2) from below and never passes it."""
    from dpgossip.protocols.ppm.sensitivity import replacement_change

    rng = np.random.default_rng(4)
    d, p = 6, 3
    V, _ = np.linalg.qr(rng.standard_normal((d, p)))
    best = 0.0
    for _ in range(4000):
        a, b = V @ rng.standard_normal(p), V @ rng.standard_normal(p)
        a = a + 0.05 * rng.standard_normal(d)
        b = b + 0.05 * rng.standard_normal(d)
        best = max(best, replacement_change(a / np.linalg.norm(a), b / np.linalg.norm(b), V))
    assert 1.41 < best <= math.sqrt(2)
    sentence = (f"A seeded random search over unit vectors near `range(V)` (`d = 6`, `p = 3`, 4,000 "
                f"pairs) reaches `{best:.4f}`, against `sqrt(2) = {math.sqrt(2):.4f}`, and never goes "
                "above it")
    assert sentence in _page()


@pytest.mark.parametrize("name, overrides, where", [
    (ACCOUNTANTS, {"ppm.epsilon": 0.5, "ppm.delta": 1e-6, "protocol.iterations": 10, "sweep.zip": []},
     {"iterations": "10"}),
    (GOSSIP, {"protocol.consensus_steps": 8, "ppm.mask_std": 10.0}, {"consensus_steps": "8",
                                                                    "mask_std": "10.0"}),
], ids=[ACCOUNTANTS, GOSSIP])
def test_one_point_is_what_the_run_computes(tmp_path, name, overrides, where):
    """One point of each scenario run alone (about a second): its row is the stored one, every column
    the run writes but the point's index, character for character."""
    from dpgossip.scenario import load_scenario, run_scenario

    scenario = load_scenario(SCENARIOS / f"{name}.toml").with_overrides(overrides)
    assert len(scenario.points()) == 1
    (fresh,) = read_rows(name, run_scenario(scenario, tmp_path / "point", quiet=True))
    (stored,) = [r for r in read_rows(name) if all(r[k] == v for k, v in where.items())]
    columns = [k for k in fresh if k != "point"]
    assert {"guaranteed_epsilon", "gdp_epsilon"} <= set(columns) <= set(stored)
    assert {k: fresh[k] for k in columns} == {k: stored[k] for k in columns}


@pytest.mark.slow
@pytest.mark.parametrize("name", [ACCOUNTANTS, GOSSIP])
def test_the_scenario_rerun_writes_the_stored_files(tmp_path, name):
    """The whole scenario again with the command the page names (seconds): the stored files byte for
    byte."""
    from dpgossip.cli import main

    out = tmp_path / name
    assert main(["run", str(SCENARIOS / f"{name}.toml"), "--out", str(out), "--no-plots", "-q"]) == 0
    for stored in STORED:
        assert (out / stored).read_bytes() == (RESULTS / name / stored).read_bytes(), stored
