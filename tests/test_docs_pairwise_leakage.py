"""The pairwise-leakage numbers of docs/results.md and docs/privacy.md are the stored output of the shipped
scenario pairwise-leakage.

docs/results/pairwise-leakage/ holds what ``dpgossip run scenarios/pairwise-leakage.toml --out
docs/results/pairwise-leakage --no-plots --workers 2`` writes, kept to leakage.csv (every (observer,
target) pair of the 16-agent ring: the RDP epsilon at delta = 1e-5 of the worst neighbour found, the
neighbour, its target's certified upper bound), config.resolved.json and summary.json. The pages' sentences
(by hop distance: the mean of the pairs within and beyond c hops, the worst pair, the range of the
certified bounds and the largest ratio upper / lower) are rendered here from the stored leakage.csv and
compared with the pages (whitespace normalised); bounds are printed rounded up
(:func:`dpgossip.rounding.format_upper`). The default suite evaluates one pair's stored neighbour again (no
search) and recomputes every target's certified bound; the slow tests search target 0 again and rerun
the whole command, comparing leakage.csv byte for byte (the same bits for any number of processes:
docs/audit-scale.md, Section 6).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from statistics import fmean

import pytest

from dpgossip.rounding import format_upper
from tests.stored_results import assert_run_writes_stored

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "pairwise-leakage.toml"
RESULTS = ROOT / "docs" / "results" / "pairwise-leakage"
COMMAND = ("dpgossip run scenarios/pairwise-leakage.toml --out docs/results/pairwise-leakage --no-plots "
           "--workers 2")
REACH = 3
"""The scenario's consensus_steps c: gossip carries z_j at most c hops."""
SAMPLED = (0, 1)
"""The (observer, target) pair whose stored neighbour the default suite evaluates again."""


def _flat(text: str) -> str:
    return " ".join(text.split())


def _problem():
    """The shipped scenario's one point and its problem (data, network, parameters)."""
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem

    sc = load_scenario(SCENARIO)
    (point,) = sc.points()
    return point, resolve_problem(point.config, build_structure(point.config, sc.base))


def stored_rows(folder: Path = RESULTS) -> list[dict[str, str]]:
    """Every column of the stored leakage.csv, one row per (observer, target)."""
    with open(folder / "leakage.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def leakage_pairs(folder: Path = RESULTS) -> list[dict[str, str]]:
    """Every pair of a pairwise-leakage results folder: its epsilon (the value of the worst neighbour
    found) and its certified upper bound, at full precision."""
    return [{"observer": r["observer"], "target": r["target"], "hops": r["hops"],
             "epsilon": r["epsilon"], "epsilon_upper": r["epsilon_upper"]} for r in stored_rows(folder)]


def published_lower(r: dict[str, str]) -> float:
    """A pair's published value: the epsilon of the worst neighbour the scenario's own search found (its
    ``leakage.csv``, stored as ``epsilon``)."""
    return float(r["epsilon"])


def leakage_by_hops(pairs: list[dict[str, str]]) -> list[dict[str, str]]:
    """By hop distance: the pairs' published values (:func:`published_lower`; mean, min, max, to
    nearest), their certified upper bounds (min, max) and the largest ratio upper / lower, these three
    rounded up (an upper bound printed is never below the bound; the ratio is printed as "at most")."""
    groups: dict[int, list[dict[str, str]]] = {}
    for r in pairs:
        groups.setdefault(int(r["hops"]), []).append(r)
    out = []
    for h, rs in sorted(groups.items()):
        v = [published_lower(r) for r in rs]
        up = [float(r["epsilon_upper"]) for r in rs]
        out.append({"hops": str(h), "pairs": str(len(v)), "mean": f"{fmean(v):.3g}",
                    "min": f"{min(v):.3g}", "max": f"{max(v):.3g}", "upper_min": format_upper(min(up), 3),
                    "upper_max": format_upper(max(up), 3),
                    "gap_max": format_upper(max(u / e for u, e in zip(up, v, strict=True)), 3)})
    return out


def leakage_sentence(rows: list[dict[str, str]], reach: int) -> str:
    """docs/results.md's sentence on the values by hop distance (``reach`` = c)."""
    near = [r for r in rows if int(r["hops"]) <= reach]
    far = [r for r in rows if int(r["hops"]) > reach]
    worst = max(rows, key=lambda r: float(r["max"]))
    means_near = sorted(float(r["mean"]) for r in near)
    means_far = sorted(float(r["mean"]) for r in far)

    def span(v: list[float]) -> str:
        return f"{v[0]:.3g}" if f"{v[0]:.3g}" == f"{v[-1]:.3g}" else f"{v[0]:.3g} to {v[-1]:.3g}"

    return (f"mean {span(means_near)} for observers within c = {reach} hops of "
            f"the target and {span(means_far)} beyond (worst pair "
            f"{float(worst['max']):.3g}, at {worst['hops']} hop{'s' if worst['hops'] != '1' else ''})")


def upper_sentence(rows: list[dict[str, str]]) -> str:
    """The sentence on the certified side (the bounds and the ratio as :func:`leakage_by_hops` rounded
    them up)."""
    low = min(float(r["upper_min"]) for r in rows)
    high = max(float(r["upper_max"]) for r in rows)
    gap = max(float(r["gap_max"]) for r in rows)
    return (f"the certified upper bounds of the pairs range from {format_upper(low, 3)} to "
            f"{format_upper(high, 3)} (rounded up; upper / lower at most {format_upper(gap, 3)})")


def test_the_stored_results_are_the_scenario_s():
    config = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))
    assert config["name"] == "pairwise-leakage"
    assert config["privacy"]["methods"] == ["rdp"] and config["network"]["agents"] == 16
    assert config["protocol"]["consensus_steps"] == REACH
    assert {r["method"] for r in stored_rows()} == {"rdp"}


def test_every_pair_is_below_its_target_s_one_certified_bound():
    pairs = leakage_pairs()
    assert len(pairs) == 16 * 15
    assert {(int(p["observer"]), int(p["target"])) for p in pairs} == {
        (o, j) for o in range(16) for j in range(16) if o != j}
    assert all(published_lower(p) < float(p["epsilon_upper"]) for p in pairs)
    for target in {p["target"] for p in pairs}:
        assert len({p["epsilon_upper"] for p in pairs if p["target"] == target}) == 1, target
    assert "stopped_at_cap" not in stored_rows()[0]  # no pair's search stopped at the epsilon cap


def test_results_and_privacy_print_the_stored_pairwise_leakage():
    rows = leakage_by_hops(leakage_pairs())
    assert [int(r["hops"]) for r in rows] == list(range(1, 9))  # the 16-ring: hops 1..8
    assert sum(int(r["pairs"]) for r in rows) == 16 * 15
    sentence, upper = leakage_sentence(rows, REACH), upper_sentence(rows)
    results = _flat((ROOT / "docs" / "results.md").read_text(encoding="utf-8"))
    assert sentence in results and upper in results
    assert COMMAND in results  # the page names the command that wrote the numbers
    privacy = _flat((ROOT / "docs" / "privacy.md").read_text(encoding="utf-8"))
    assert sentence.replace(" for observers within c = 3 hops of the target", " within 3 hops") in privacy
    assert upper in privacy and COMMAND in privacy
    # the step at hop c + 1 that both pages describe
    assert min(float(r["mean"]) for r in rows[:REACH]) > 1.5 * max(float(r["mean"]) for r in rows[REACH:])


def test_the_stored_neighbour_of_one_pair_gives_its_stored_values():
    """The sampled pair's stored worst neighbour evaluated again (no search): its stored RDP epsilon and
    deltas, to 1e-12 relative (the evaluation outside the search sums in another order; a few seconds)."""
    import numpy as np

    from dpgossip.privacy.neighbours import Neighbour
    from dpgossip.scenario.privacy_section import audit_config

    observer, target = SAMPLED
    (stored,) = [r for r in stored_rows() if (int(r["observer"]), int(r["target"])) == SAMPLED]
    point, problem = _problem()
    neighbour = Neighbour(row=int(stored["row"]), label=stored["direction"],
                          x_new=np.array([float(v) for v in stored["replacement"].split()]))
    audit = audit_config(point.config, problem, neighbours={target: [neighbour]}, targets=[target],
                         observers=[observer])
    fresh = audit.results[SAMPLED]
    assert fresh.epsilon["rdp"] == pytest.approx(float(stored["epsilon"]), rel=1e-12)
    deltas = [float(stored[f"delta_rdp_at_eps_{e:g}"]) for e in point.config["privacy"]["epsilon"]]
    assert fresh.delta["rdp"] == pytest.approx(deltas, rel=1e-12)


def test_the_stored_upper_bounds_are_what_the_code_certifies():
    """Every target's certified bound in the stored leakage.csv, recomputed from the shipped scenario
    (a few seconds)."""
    from dpgossip.protocols.ddppm.audit import upper_bounds

    point, problem = _problem()
    bounds = upper_bounds(problem.data, problem.network, problem.params,
                          point.config["privacy"]["delta"], point.config["privacy"]["neighbours"])
    stored = {int(p["target"]): float(p["epsilon_upper"]) for p in leakage_pairs()}
    # to 1e-12 relative: the last bits move with the numpy release (its summation order), and every
    # published bound is rounded up
    assert stored.keys() == bounds.keys()
    for j, b in bounds.items():
        assert stored[j] == pytest.approx(b.epsilon, rel=1e-12, abs=0)


@pytest.mark.slow
def test_the_stored_pairs_of_one_target_are_what_its_search_finds():
    """Target 0's 15 pairs, searched again as the shipped scenario says: the stored values, bit for
    bit (about 15 s)."""
    from dpgossip.scenario.privacy_section import audit_config

    point, problem = _problem()
    audit = audit_config(point.config, problem, targets=[0])
    stored = {(int(p["observer"]), int(p["target"])): float(p["epsilon"])
              for p in leakage_pairs() if p["target"] == "0"}
    assert stored == {k: r.epsilon["rdp"] for k, r in audit.results.items()}


@pytest.mark.slow
def test_the_stored_leakage_is_what_the_command_writes(tmp_path):
    """The whole run again, on one process (the stored command runs on two: the same bits for any
    count): leakage.csv byte for byte (about 4 min on one core)."""
    assert_run_writes_stored(SCENARIO, tmp_path / "out", RESULTS, ("leakage.csv",))
