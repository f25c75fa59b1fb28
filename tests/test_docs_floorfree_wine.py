"""docs/floorfree.md's Wine table (Section 6) is the stored output of the shipped scenario floorfree-wine.

docs/results/floorfree-wine/ holds what ``dpgossip run scenarios/floorfree-wine.toml --out
docs/results/floorfree-wine --no-plots`` writes, kept to runs.csv, summary.json and config.resolved.json
(the errors over 20 repeats and the guarantees per noise multiplier); docs/results/floorfree-wine-audit/
holds the guarantees.csv and worst.json of ``dpgossip audit scenarios/floorfree-wine.toml --out
docs/results/floorfree-wine-audit --no-plots`` (the eavesdropper's exact audit of repeat 0 at each
multiplier). The table and the sentences that quote it are rendered here from the stored files and
compared with the page (whitespace normalised); bounds are printed rounded up. The default suite runs one
point again (two repeats, every column of runs.csv character for character) and evaluates the stored
worst neighbour of its audit again (the row's search, not the whole audit); the slow test reruns both
commands and compares the stored files byte for byte (summary.json without the library versions).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from dpgossip.rounding import format_upper

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "floorfree-wine.toml"
RUN = ROOT / "docs" / "results" / "floorfree-wine"
AUDIT = ROOT / "docs" / "results" / "floorfree-wine-audit"
RUN_COMMAND = "dpgossip run scenarios/floorfree-wine.toml --out docs/results/floorfree-wine --no-plots"
AUDIT_COMMAND = ("dpgossip audit scenarios/floorfree-wine.toml --out docs/results/floorfree-wine-audit "
                 "--no-plots")
SAMPLED = 7.0      # the noise multiplier the default suite recomputes (the one the reading quotes)
MACHINE_FIELDS = ("versions",)  # summary.json fields that name the machine's libraries, not the run
GUARANTEES = {"guarantee_gdp": "gdp_epsilon", "guarantee_pld": "guaranteed_epsilon",
              "guarantee_rdp": "rdp_epsilon"}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _one(values: list[str]) -> float:
    """The one value a column takes over the repeats of a point."""
    (value,) = set(values)
    return float(value)


def wine_rows(run: Path = RUN, audit: Path = AUDIT) -> list[dict]:
    """One row per noise multiplier: mean errors over the repeats and the guarantees (runs.csv), the
    audit of repeat 0 (guarantees.csv)."""
    runs, audited = _csv(run / "runs.csv"), _csv(audit / "guarantees.csv")
    rows = []
    for s in sorted({float(r["noise_multiplier"]) for r in runs}):
        mine = [r for r in runs if float(r["noise_multiplier"]) == s]
        (a,) = [r for r in audited if float(r["floorfree_noise_multiplier"]) == s]
        row = {"noise_multiplier": s, "repeats": len(mine),
               "error_q": sum(float(r["error"]) for r in mine) / len(mine),
               "error_u": sum(float(r["max_direction_error"]) for r in mine) / len(mine),
               "audit": float(a["audited_epsilon"]), "audit_upper": float(a["audited_epsilon_upper"]),
               "target": int(a["audited_target"]), "row": int(a["audited_row"]),
               "agents": int(_one([r["agents"] for r in mine])), "n": int(_one([r["n"] for r in mine]))}
        row.update({key: _one([r[col] for r in mine]) for key, col in GUARANTEES.items()})
        for key, col in GUARANTEES.items():  # the audit's guarantees are the run's
            assert float(a[col]) == row[key], (s, col)
        rows.append(row)
    return rows


def wine_table(rows: list[dict]) -> str:
    """The markdown table of docs/floorfree.md: the audit (a lower estimate) to nearest, the certified
    upper end and the guarantees (upper bounds) rounded up."""
    lines = ["| noise multiplier s | audited epsilon (worst target) | certified upper end | guarantee (GDP) "
             "| guarantee (PLD) | guarantee (RDP) | error sin(u_1, q^(T)) | error sin(v_1, u^(T)) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        errors = f"{r['error_q']:.3f} | {r['error_u']:.3f} |"
        bounds = [r["audit_upper"], *(r[k] for k in GUARANTEES)]
        if r["noise_multiplier"] == 0:
            assert math.isinf(r["audit"]) and all(math.isinf(b) for b in bounds)
            lines.append(f"| 0 (no noise) | inf | inf | inf | inf | inf | {errors}")
            continue
        up = " | ".join(format_upper(b, 4) for b in bounds)
        lines.append(f"| {r['noise_multiplier']:g} | {r['audit']:.4g} | {up} | {errors}")
    return "\n".join(lines)


def _share(r: dict) -> float:
    """The audit's share of its certified upper end, in %."""
    return 100 * r["audit"] / r["audit_upper"]


def wine_sentences(rows: list[dict]) -> list[str]:
    """The sentences of docs/floorfree.md that quote the table."""
    noisy = [r for r in rows if r["noise_multiplier"] > 0]
    above = max(r["noise_multiplier"] for r in noisy if r["audit"] >= 1)
    first = min(r["noise_multiplier"] for r in noisy if r["audit"] < 1)
    (at_first,) = [r for r in rows if r["noise_multiplier"] == first]
    (at_one,) = [r for r in rows if r["noise_multiplier"] == 1]
    later = [_share(r) for r in noisy if r["noise_multiplier"] >= 3]
    return [
        f"The errors are means over the {_one([str(r['repeats']) for r in rows]):g} repeats",
        f"through 1 between `s = {above:g}` and `s = {first:g}`",
        f"The worst neighbour found reaches {min(later):.0f} to {max(later):.0f} % of it in epsilon "
        f"from `s = 3` on, and {_share(at_one):.0f} % at `s = 1`",
        f"At `s = {first:g}`, the first level in the table with an audited epsilon below 1, the "
        f"disseminated `q^(T)` is noise (error {at_first['error_q']:.3f}).",
        f"against noise of std {first:g}. The shared direction `u^(T)` is not much better "
        f"({at_first['error_u']:.3f}).",
        f"on {at_first['n']} rows and {at_first['agents']} agents",
    ]


def test_the_stored_results_are_the_shipped_scenario_s():
    """The configuration as the scenario file resolves now, every point and repeat ok; the audit has one
    row per point, the run's axis values, every pair exact by construction (the eavesdropper)."""
    from dpgossip.scenario import load_scenario

    scenario = load_scenario(SCENARIO)
    stored = json.loads((RUN / "config.resolved.json").read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(scenario.config))
    runs = _csv(RUN / "runs.csv")
    assert len(runs) == len(scenario.points()) * scenario.config["repeats"]
    assert {r["status"] for r in runs} == {"ok"}
    summary = json.loads((RUN / "summary.json").read_text(encoding="utf-8"))
    assert summary["scenario"] == "floorfree-wine" and summary["statuses"] == {"ok": len(runs)}
    worst = json.loads((AUDIT / "worst.json").read_text(encoding="utf-8"))
    assert worst["scenario"] == "floorfree-wine"
    assert [p["axes"] for p in worst["points"]] == [p.axes for p in scenario.points()]
    assert {p["audit_view"] for p in worst["points"]} == {"eavesdropper (every release)"}


def test_docs_floorfree_prints_the_stored_wine_table_and_sentences():
    rows = wine_rows()
    page = (ROOT / "docs" / "floorfree.md").read_text(encoding="utf-8")
    assert wine_table(rows) in page
    flat = _flat(page)
    for sentence in wine_sentences(rows):
        assert sentence in flat, sentence
    assert f"`{RUN_COMMAND}`" in flat and f"`{AUDIT_COMMAND}`" in flat


def test_what_the_wine_reading_states_holds():
    """The audit falls as s grows, each bracketed by its certified end, which is the GDP guarantee
    (leverage 1), itself at most the RDP one; the guarantees fall too."""
    noisy = [r for r in wine_rows() if r["noise_multiplier"] > 0]
    audits = [r["audit"] for r in noisy]
    assert audits == sorted(audits, reverse=True) and audits[-1] < 0.1
    for r in noisy:
        assert r["audit"] <= r["audit_upper"] <= r["guarantee_gdp"] * (1 + 1e-9)
        assert r["audit_upper"] == pytest.approx(r["guarantee_gdp"], rel=1e-9)
        assert r["guarantee_gdp"] <= r["guarantee_pld"] * (1 + 1e-6) <= r["guarantee_rdp"] * (1 + 1e-6)
    pld = [r["guarantee_pld"] for r in noisy]
    assert pld == sorted(pld, reverse=True)


def test_every_observer_of_the_ring_sees_what_the_eavesdropper_sees():
    """The page's reading of the eavesdropper's audit as the observer view's: on paper-ring4 with c = 5
    every single observer isolates every other agent's input (leverage 1 for the 12 pairs) and recovers
    every direction, so its worst pair is the eavesdropper's worst target (the same maximisation).
    And the noise that reaches the average, sqrt(m) s per entry in d coordinates, is larger than the
    signal X^T X u (at most the top eigenvalue) at the first s with an audited epsilon below 1."""
    import numpy as np

    from dpgossip.data import load_dataset
    from dpgossip.protocols.ddppm.floorfree_audit import determines_directions, leverage
    from dpgossip.topology import make_network

    network = make_network("paper-ring4")
    for observer in range(network.m):
        assert determines_directions(network, 5, "observer", [observer])
        for target in set(range(network.m)) - {observer}:
            assert leverage(network, 5, "observer", target, [observer]) == pytest.approx(1.0, abs=1e-12)
    data = load_dataset("wine", agents=4)
    first = min(r["noise_multiplier"] for r in wine_rows() if 0 < r["audit"] < 1)
    top = float(np.linalg.svd(data.X, compute_uv=False)[0] ** 2)
    assert top < math.sqrt(data.m) * first * math.sqrt(data.d)


def _run_point(noise_multiplier: float, repeats: int, out: Path) -> list[dict[str, str]]:
    from dpgossip.scenario import load_scenario, run_scenario

    scenario = load_scenario(SCENARIO).with_overrides(
        {"floorfree.noise_multiplier": noise_multiplier, "repeats": repeats})
    assert len(scenario.points()) == 1
    return _csv(run_scenario(scenario, out, quiet=True) / "runs.csv")


def test_a_stored_point_is_what_the_run_computes(tmp_path):
    """The point s = 7 run alone with its first two repeats (repeat k has the same seed whatever the
    number of repeats and the other points): the stored rows of those repeats, every column but the
    point's index and its axis, character for character. About two seconds."""
    fresh = _run_point(SAMPLED, 2, tmp_path / "point")
    stored = [r for r in _csv(RUN / "runs.csv")
              if float(r["noise_multiplier"]) == SAMPLED and int(r["repeat"]) < 2]
    assert len(fresh) == len(stored) == 2
    columns = [k for k in fresh[0] if k != "point"]   # alone, the point has no sweep axis column
    assert set(columns) == set(stored[0]) - {"point", "floorfree_noise_multiplier"}
    assert [{k: r[k] for k in columns} for r in fresh] == [{k: r[k] for k in columns} for r in stored]


def test_the_stored_audit_of_a_point_is_what_its_neighbour_search_finds():
    """Repeat 0 at s = 7 again, and the stored worst row of the stored worst target searched again
    (:func:`worst_neighbour`, as the audit does for every row): the stored audited epsilon; the certified
    upper end is the closed form ``sqrt(T + 1) / s`` at delta. About a second."""
    import numpy as np

    from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
    from dpgossip.protocols.ddppm.floorfree_audit import worst_neighbour
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.point import PointSpec
    from dpgossip.scenario.problem import build_structure, resolve_problem
    from dpgossip.scenario.protocol_point import build_point
    from dpgossip.scenario.runner import repeat_seed

    (r,) = [r for r in wine_rows() if r["noise_multiplier"] == SAMPLED]
    scenario = load_scenario(SCENARIO).with_overrides({"floorfree.noise_multiplier": SAMPLED})
    (point,) = scenario.points()
    problem = resolve_problem(point.config, build_structure(point.config, scenario.base))
    spec = PointSpec.from_config(point.config)
    run = build_point(spec, problem).protocol.run(problem.data, problem.network, repeat_seed(spec.seed, 0))
    p = run.result.params
    value, _ = worst_neighbour(problem.data.X[r["row"]], run.result.directions[:, r["target"]], kappa=1.0,
                               sigma_z=p.sigma_z, sigma_p=p.sigma_p, seed=r["row"])
    delta = spec.settings["delta"]
    assert gaussian_mechanism_epsilon(math.sqrt(value), delta) == pytest.approx(r["audit"], rel=1e-9)
    upper = gaussian_mechanism_epsilon(math.sqrt(p.iterations + 1) / SAMPLED, delta)
    assert upper == pytest.approx(r["audit_upper"], rel=1e-9)
    assert np.isfinite(value)


def _summary_without_machine(folder: Path) -> dict:
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    return {k: v for k, v in summary.items() if k not in MACHINE_FIELDS}


@pytest.mark.slow
def test_the_stored_results_are_what_the_commands_write(tmp_path):
    """Both commands again as the page names them (the run about 1.5 minutes of CPU, the audit about
    2.5): the same runs.csv, config.resolved.json, guarantees.csv and worst.json byte for byte, the
    same summary.json but the versions."""
    from dpgossip.cli import main

    run, audit = tmp_path / "run", tmp_path / "audit"
    assert main(["run", str(SCENARIO), "--out", str(run), "--no-plots", "-q"]) == 0
    assert main(["audit", str(SCENARIO), "--out", str(audit), "--no-plots", "-q"]) == 0
    for fresh, folder in ((run, RUN), (audit, AUDIT)):
        for path in sorted(p.name for p in folder.iterdir() if p.name != "summary.json"):
            assert (fresh / path).read_bytes() == (folder / path).read_bytes(), path
    assert _summary_without_machine(run) == _summary_without_machine(RUN)
