"""docs/privacy.md's worked example is the stored output of the shipped scenario privacy-example.

Observer 0 attacking agent 1 on the paper's 4-agent ring (Wine, T = 5, c = 5) at four noise schedules:
the rows of ``dpgossip audit scenarios/privacy-example.toml --out docs/results/privacy-example
--no-plots`` and, for the paper's literal view, of the same command with ``--view paper`` into
docs/results/privacy-example-paper/. The page's table and sentences are rendered here from the stored
pairs.csv and compared with the page; the default suite also evaluates the stored worst neighbour of one
pair again (no search) and recomputes its target's certified upper bound; the slow test reruns the
whole audit and compares the tables byte for byte.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from dpgossip.rounding import format_upper

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "privacy-example.toml"
RESULTS = ROOT / "docs" / "results" / "privacy-example"
PAPER = ROOT / "docs" / "results" / "privacy-example-paper"
OBSERVER, TARGET = 0, 1
TABLES = ("pairs.csv", "worst.json")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _noise(folder: Path) -> dict[int, dict]:
    """Each point's noise schedule, from the axes of worst.json."""
    points = json.loads((folder / "worst.json").read_text(encoding="utf-8"))["points"]
    return {int(p["point"]): p["axes"]["protocol.noise"] for p in points}


def example_rows(folder: Path) -> list[dict]:
    """One row per point: the (OBSERVER, TARGET) pair's values by method, with its noise schedule."""
    noise = _noise(folder)
    with open(folder / "pairs.csv", encoding="utf-8") as fh:
        mine = [r for r in csv.DictReader(fh)
                if (int(r["observer"]), int(r["target"])) == (OBSERVER, TARGET)]
    rows = []
    for point in sorted(noise):
        by = {r["method"]: r for r in mine if int(r["point"]) == point}
        exact = by["exact"]
        assert exact["stopped_at_cap"] == "False"  # every value is the search's end, not the cap
        assert by["rdp"]["replacement"] == by["chernoff"]["replacement"] == exact["replacement"]
        rows.append({"schedule": noise[point]["schedule"], "scale": float(noise[point]["scale"]),
                     "exact": float(exact["epsilon"]), "rdp": float(by["rdp"]["epsilon"]),
                     "chernoff": float(by["chernoff"]["epsilon"]),
                     "delta5": float(exact["delta_at_eps_5"]), "upper": float(exact["epsilon_upper"]),
                     "first": float(exact["first_message_bound"]), "row": int(exact["row"]),
                     "levels": [float(v) for v in exact["value_by_level"].split()]})
    return rows


def _geometric_label() -> str:
    """Corollary 1's schedule at scale 1 on this data: sigma_p(1) ... sigma_p(T)."""
    from dpgossip.data import load_dataset
    from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
    from dpgossip.topology import make_network

    params = resolve_params(load_dataset("wine", agents=4), make_network("paper-ring4"), iterations=5,
                            consensus_steps=5, noise=NoiseSchedule(kind="geometric", scale=1.0))
    return (f"Corollary 1 geometric ({params.sigma_p[0, 0]:.2g} ... "
            f"{params.sigma_p[0, -1]:.2g})")


def example_table(rows: list[dict]) -> str:
    """The markdown table of docs/privacy.md."""
    lines = ["| noise schedule `sigma_p(t)` | exact epsilon at delta = 1e-5 (lower estimate) "
             "| rdp of that neighbour | chernoff of that neighbour "
             "| exact delta at epsilon = 5 (same neighbour) "
             "| certified upper bound on epsilon at delta = 1e-5 | first-message bound (epsilon) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        name = _geometric_label() if r["schedule"] == "geometric" else f"constant {r['scale']:g}"
        lines.append(f"| {name} | {r['exact']:.4g} | {r['rdp']:.4g} | {r['chernoff']:.4g} | "
                     f"{r['delta5']:.3g} | {format_upper(r['upper'], 4)} | {r['first']:.4g} |")
    return "\n".join(lines)


def example_sentences(rows: list[dict], paper: list[dict]) -> list[str]:
    """The page's sentences that quote the example."""
    ratio = [r["upper"] / r["exact"] for r in rows]
    change = [(r["levels"][-1] - r["levels"][-2]) / r["levels"][-1] for r in rows]
    const = [c for r, c in zip(rows, change, strict=True) if r["schedule"] == "constant"]
    (geo,) = [c for r, c in zip(rows, change, strict=True) if r["schedule"] == "geometric"]
    (one,) = [r for r in paper if r["schedule"] == "constant" and r["scale"] == 1.0]
    (one_observer,) = [r for r in rows if r["schedule"] == "constant" and r["scale"] == 1.0]
    big = max(rows, key=lambda r: r["scale"] if r["schedule"] == "constant" else -1.0)
    over = [min(r["rdp"], r["chernoff"]) / r["exact"] - 1 for r in rows]
    return [
        f"the certified upper bound on epsilon at delta = 1e-5 is {min(ratio):.3g} to "
        f"{max(ratio):.3g} times the lower estimate",
        f"The `paper` view gives {one['exact']:.4g} at constant 1",
        f"changed the value by at most {100 * max(const):.2g} % at the constant schedules and by "
        f"{100 * geo:.2g} % at the geometric one",
        f"{big['exact']:.4g} here at delta = 1e-5, and delta = {big['delta5']:.3g} at epsilon = 5",
        f"the certified upper bound at delta = 1e-5 is {format_upper(big['upper'], 4)} there",
        f"RDP and Chernoff overstate epsilon by {100 * min(over):.0f} to {100 * max(over):.0f} % here",
        f"At constant 1 the worst neighbour replaces row {one_observer['row']} of agent 1",
    ]


def worst_sentence(folder: Path, schedule: str, scale: float) -> str:
    """The page's sentence on the worst pair of the whole ring at one schedule (worst.json)."""
    points = json.loads((folder / "worst.json").read_text(encoding="utf-8"))["points"]
    (w,) = [p for p in points if p["axes"]["protocol.noise"] == {"schedule": schedule, "scale": scale}]
    return (f"the worst pair of the ring at constant {scale:g} is observer {w['observer']} against agent "
            f"{w['target']}: exact epsilon {w['epsilon']['exact']:.4g}, under agent {w['target']}'s "
            f"certified upper bound of {format_upper(w['epsilon_upper'], 4)}")


def test_the_stored_results_are_the_scenario_s():
    for folder in (RESULTS, PAPER):
        assert json.loads((folder / "worst.json").read_text(encoding="utf-8"))["scenario"] == \
            "privacy-example"
    assert {p["view"] for p in json.loads((PAPER / "worst.json").read_text())["points"]} == {"paper"}
    assert {p["view"] for p in json.loads((RESULTS / "worst.json").read_text())["points"]} == \
        {"observer"}


def test_docs_privacy_prints_the_stored_example():
    rows, paper = example_rows(RESULTS), example_rows(PAPER)
    assert [(r["schedule"], r["scale"]) for r in rows] == [
        ("geometric", 1.0), ("constant", 0.1), ("constant", 1.0), ("constant", 10.0)]
    page = (ROOT / "docs" / "privacy.md").read_text(encoding="utf-8")
    assert example_table(rows) in page
    flat = _flat(page)
    for sentence in [*example_sentences(rows, paper), worst_sentence(RESULTS, "constant", 1.0)]:
        assert sentence in flat, sentence
    for r in rows:  # every row bracketed: the lower estimate below its target's certified bound
        assert r["exact"] <= r["upper"] and r["exact"] <= r["rdp"]


def test_the_other_pages_quote_the_stored_example():
    rows, paper = example_rows(RESULTS), example_rows(PAPER)
    (one,) = [r for r in rows if r["schedule"] == "constant" and r["scale"] == 1.0]
    (one_paper,) = [r for r in paper if r["schedule"] == "constant" and r["scale"] == 1.0]
    value = f"{one['exact']:.4g}"
    floorfree = _flat((ROOT / "docs" / "floorfree.md").read_text(encoding="utf-8"))
    assert f"{value} at delta = 1e-5 on Wine, observer 0 against agent 1 at constant noise 1" in floorfree
    least = min(r["exact"] for r in rows)  # "or more at every noise level tried"
    assert f"{least:.4g} or more at every noise level tried" in floorfree and least <= one["exact"]
    # docs/paper.md, "The view is not the reason": the paper view equals the observer view to 4 digits
    assert f"{one_paper['exact']:.4g}" == value
    assert "gives the same epsilon as the observer view to four digits" in _flat(
        (ROOT / "docs" / "paper.md").read_text(encoding="utf-8"))


def test_the_stored_worst_neighbour_and_bound_are_what_the_code_computes():
    """The constant-1 point: the stored neighbour of (0, 1) evaluated again (no search) gives the stored
    exact epsilon, and agent 1's certified upper bound is recomputed (a few seconds)."""
    import numpy as np

    from dpgossip.privacy.neighbours import Neighbour
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.privacy_section import audit_config
    from dpgossip.scenario.problem import build_structure, resolve_problem

    with open(RESULTS / "pairs.csv", encoding="utf-8") as fh:
        (stored,) = [r for r in csv.DictReader(fh) if r["point"] == "2" and r["method"] == "exact"
                     and (int(r["observer"]), int(r["target"])) == (OBSERVER, TARGET)]
    sc = load_scenario(SCENARIO)
    point = sc.points()[2]
    assert point.config["protocol"]["noise"] == {"schedule": "constant", "scale": 1.0}
    problem = resolve_problem(point.config, build_structure(point.config, sc.base))
    neighbour = Neighbour(row=int(stored["row"]), label=stored["direction"],
                          x_new=np.array([float(v) for v in stored["replacement"].split()]))
    audit = audit_config(point.config, problem, neighbours={TARGET: [neighbour]}, targets=[TARGET],
                         observers=[OBSERVER])
    assert audit.results[(OBSERVER, TARGET)].epsilon["exact"] == pytest.approx(
        float(stored["epsilon"]), rel=1e-9)
    bound = audit.upper[TARGET].epsilon
    assert bound == pytest.approx(float(stored["epsilon_upper"]), rel=1e-12) and not math.isnan(bound)


@pytest.mark.slow
def test_the_stored_example_is_what_the_audit_writes(tmp_path):
    """The whole audit again, both views (about 55 min of CPU on one core: 27 min for the observer view
    measured with `time`): the same tables, byte for byte."""
    from dpgossip.cli import main

    for folder, extra in ((RESULTS, []), (PAPER, ["--view", "paper"])):
        out = tmp_path / folder.name
        assert main(["audit", str(SCENARIO), "--out", str(out), "--no-plots", "-q", *extra]) == 0
        for name in TABLES:
            assert (out / name).read_bytes() == (folder / name).read_bytes(), (folder.name, name)
