"""The paper-fig3 numbers of docs/paper.md (and README.md's scenario table) are the stored output of the
shipped scenario paper-fig3.

docs/results/paper-fig3/ holds what ``dpgossip run scenarios/paper-fig3.toml --out docs/results/paper-fig3
--workers 2`` writes, kept to leakage.csv (every (observer, target) pair of the paper's 4-agent ring
at each dataset and T: the exact delta at epsilon = 5 of the worst neighbour found, a lower estimate,
and its target's certified bounds: the delta proven at epsilon = 5 and epsilon proven at delta = 1e-5),
runs.csv (the error of every repeat), points.csv, config.resolved.json and summary.json. The page's
sentences are rendered here from those files and compared with the page (whitespace normalised); a
proven value is printed rounded up (:func:`dpgossip.rounding.format_upper`; a delta near 1 as
``1 - x`` with ``x`` rounded down). The default suite recomputes the certified side of one point (no
search) and the error of one repeat; the slow test reruns the whole command (about 40 min on 2 processes)
and compares the stored tables byte for byte.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from statistics import fmean

import pytest

from dpgossip.rounding import format_upper

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "paper-fig3.toml"
RESULTS = ROOT / "docs" / "results" / "paper-fig3"
COMMAND = "dpgossip run scenarios/paper-fig3.toml --out docs/results/paper-fig3 --workers 2"
DATASETS = (("wine", "Wine"), ("breast_cancer", "Breast Cancer"), ("diabetes", "Diabetes"))
EPSILON = 5
SAMPLED = ("wine", 1)
"""The (dataset, T) point whose certified side and first repeat the default suite recomputes."""


def _flat(text: str) -> str:
    return " ".join(text.split())


def _read(name: str, folder: Path = RESULTS) -> list[dict[str, str]]:
    with open(folder / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def lower_delta_text(v: float) -> str:
    """A lower estimate of delta to three decimals, or ``1 - x`` when it would print as 1.000."""
    return f"{v:.3f}" if v < 0.9995 else f"1 - {1.0 - v:.1e}"


def proven_delta_text(v: float) -> str:
    """A proven delta, never printed below the value: ``1`` (nothing below 1 proven), three digits
    rounded up, or ``1 - x`` with ``x`` rounded down to two digits when it is that close to 1."""
    if v >= 1.0:
        return "1"
    if v < 0.999:
        return format_upper(v, 3)
    return "1 - " + format_upper(-(1.0 - v), 2).removeprefix("-")


def fig3_rows(folder: Path = RESULTS) -> list[dict[str, object]]:
    """Per dataset and T: the worst pair's exact delta at epsilon = 5 (the largest over the 12 pairs, a
    lower estimate), the largest delta the targets' bounds prove there, the largest epsilon they prove
    at delta = 1e-5, and the mean error of the final estimate over the repeats."""
    points = {r["point"]: (r["data_source"], int(r["protocol_iterations"]))
              for r in _read("points.csv", folder)}
    out: dict[tuple[str, int], dict[str, object]] = {}
    for r in _read("leakage.csv", folder):
        row = out.setdefault(points[r["point"]], {"lower": 0.0, "delta_upper": 0.0,
                                                  "epsilon_upper": 0.0, "errors": []})
        row["lower"] = max(row["lower"], float(r[f"delta_exact_at_eps_{EPSILON}"]))
        row["delta_upper"] = max(row["delta_upper"], float(r[f"delta_upper_at_eps_{EPSILON}"]))
        row["epsilon_upper"] = max(row["epsilon_upper"], float(r["epsilon_upper"]))
    for r in _read("runs.csv", folder):
        out[points[r["point"]]]["errors"].append(float(r["error"]))
    order = [d for d, _ in DATASETS]
    return [{"dataset": ds, "T": t, **v} for (ds, t), v in
            sorted(out.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1]))]


def sentences(rows: list[dict[str, object]]) -> tuple[str, str, str]:
    """docs/paper.md's three sentences on paper-fig3: the worst lower delta by T, the certified side,
    and the error at T = 5 and 10."""
    def by(ds: str) -> list[dict[str, object]]:
        return [r for r in rows if r["dataset"] == ds]

    deltas = "; ".join(f"{name} " + ", ".join(f"{lower_delta_text(r['lower'])} (T = {r['T']})"
                                              for r in by(ds)) for ds, name in DATASETS)
    proven = [r for r in rows if r["delta_upper"] < 1.0]
    if proven:
        head = "at epsilon = 5 it proves delta at most " + ", ".join(
            f"{proven_delta_text(r['delta_upper'])} ({dict(DATASETS)[r['dataset']]}, T = {r['T']})"
            for r in proven)
        if len(proven) < len(rows):
            head += f" and no delta below 1 at the other {len(rows) - len(proven)} points"
    else:
        head = (f"at epsilon = 5 it proves no delta below 1 at any of the {len(rows)} points (the "
                "bracket of each delta is [lower estimate, 1])")
    spans = [f"{format_upper(by(ds)[0]['epsilon_upper'], 3)} (T = {by(ds)[0]['T']}) to "
             f"{format_upper(by(ds)[-1]['epsilon_upper'], 3)} (T = {by(ds)[-1]['T']}) on {name}"
             for ds, name in DATASETS]
    upper = ("The certified upper bound ([upper-bound.md](upper-bound.md)) says how far above them the "
             f"true worst case may lie: {head}; at delta = 1e-5 it proves epsilon at most "
             + ", ".join(spans[:-1]) + " and " + spans[-1])
    errors = ", ".join(
        f"{name} " + " and ".join(f"{fmean(r['errors']):.2f} at T = {r['T']}" for r in by(ds)
                                  if r["T"] in (5, 10)) for ds, name in DATASETS)
    return deltas, upper, errors


def sweep_sentence(folder: Path = RESULTS) -> str:
    """How many pairs, and how many points' worst pairs, a neighbour found at another T raised
    (``found_at_point`` set in leakage.csv)."""
    rows = _read("leakage.csv", folder)
    worst: dict[str, dict[str, str]] = {}
    for r in rows:
        w = worst.get(r["point"])
        if w is None or float(r[f"delta_exact_at_eps_{EPSILON}"]) > float(w[f"delta_exact_at_eps_{EPSILON}"]):
            worst[r["point"]] = r
    raised = sum(1 for r in rows if r["found_at_point"] != "")
    return (f"they raised {raised} of the {len(rows)} pairs and the worst pair of "
            f"{sum(1 for w in worst.values() if w['found_at_point'] != '')} of the {len(worst)} points")


def _point(dataset: str, T: int):
    """The shipped scenario's point of this dataset and T, and its problem."""
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem

    sc = load_scenario(SCENARIO)
    (point,) = [p for p in sc.points() if p.axes["data.source"] == dataset
                and int(p.axes["protocol.iterations"]) == T]
    return point, resolve_problem(point.config, build_structure(point.config, sc.base))


def test_the_stored_results_are_the_scenario_s():
    config = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))
    assert config["name"] == "paper-fig3" and config["privacy"]["methods"] == ["exact"]
    assert config["privacy"]["delta_upper"] is True and config["privacy"]["rank_by"] == "delta"
    rows = fig3_rows()
    ts = config["protocol"]["iterations"]
    assert [(r["dataset"], r["T"]) for r in rows] == [(ds, t) for ds, _ in DATASETS for t in ts]
    assert all(len(r["errors"]) == config["repeats"] for r in rows)
    for r in rows:  # every bracket holds: the lower delta is below the proven one
        assert 0 < r["lower"] <= r["delta_upper"] <= 1.0, r


def test_paper_and_readme_print_the_stored_paper_fig3_numbers():
    page = _flat((ROOT / "docs" / "paper.md").read_text(encoding="utf-8"))
    for sentence in (*sentences(fig3_rows()), sweep_sentence()):
        assert _flat(sentence) in page, sentence
    assert COMMAND in page
    readme = _flat((ROOT / "README.md").read_text(encoding="utf-8"))
    assert ("| `paper-fig3.toml` | Campbell et al., Fig. 3: worst delta at epsilon = 5 and the error "
            "against the number of iterations T, three datasets (standard search) |") in readme


def test_audit_scale_md_quotes_the_bracket_of_wine_at_t_1():
    (r,) = [r for r in fig3_rows() if (r["dataset"], r["T"]) == ("wine", 1)]
    text = _flat((ROOT / "docs" / "audit-scale.md").read_text(encoding="utf-8"))
    lower, proven = lower_delta_text(r["lower"]), proven_delta_text(r["delta_upper"])
    assert (f"(published worst delta at epsilon = 5: {lower}, docs/results/paper-fig3/)") in text
    assert (f"proves delta at most {proven} at epsilon = 5, and epsilon at most "
            f"{format_upper(r['epsilon_upper'], 3)} at delta = 1e-5: the true worst delta at epsilon = 5 "
            f"lies in [{lower}, {proven}]") in text


def test_proven_deltas_print_at_or_above_the_value():
    for v in (0.5, 0.99949, 0.9999988432, 1 - 3e-13, 1.0):
        text = proven_delta_text(v)
        printed = 1.0 if text == "1" else (1.0 - float(text[4:]) if text.startswith("1 - ")
                                           else float(text))
        assert printed >= v, (v, text)
    assert proven_delta_text(0.9999988432) == "1 - 1.1e-06"


def test_the_certified_side_and_one_run_of_a_point_are_recomputed():
    """The sampled point's certified bounds (no search; a few seconds): every target's epsilon at delta =
    1e-5, and the worst pair's target's proven delta at epsilon = 5, which must hold there and not at a
    delta 0.3 % nearer the lower end (its search stops at 0.1 %); and its first repeat's error."""
    from dpgossip.protocols.ddppm.audit import upper_bounds
    from dpgossip.protocols.ddppm.matrix import run_matrix
    from dpgossip.protocols.power import top_singular
    from dpgossip.scenario.runner import repeat_seed
    from dpgossip.scenario.status import measure_run

    point, problem = _point(*SAMPLED)
    stored = [r for r in _read("leakage.csv") if r["point"] == str(point.index)]
    worst = max(stored, key=lambda r: float(r[f"delta_exact_at_eps_{EPSILON}"]))
    j, proven = int(worst["target"]), float(worst[f"delta_upper_at_eps_{EPSILON}"])
    data, network, params = problem.data, problem.network, problem.params
    if proven < 1.0:  # proven there, and not at a delta 0.3 % closer to the lower end
        assert upper_bounds(data, network, params, proven, "bounded", [j])[j].epsilon <= EPSILON
        tighter = proven - 3e-3 * min(proven, 1.0 - proven)
        assert upper_bounds(data, network, params, tighter, "bounded", [j])[j].epsilon > EPSILON
    bounds = upper_bounds(data, network, params, 1e-5, "bounded")
    for r in stored:
        assert float(r["epsilon_upper"]) == pytest.approx(bounds[int(r["target"])].epsilon, rel=1e-12)
    (run,) = [r for r in _read("runs.csv") if r["point"] == str(point.index) and r["repeat"] == "0"]
    result = run_matrix(data, network, params, repeat_seed(point.config["seed"], 0), keep_messages=False)
    measured = measure_run(result, data, top_singular(data.X, params.rank))
    assert float(run["error"]) == pytest.approx(measured.to_row()["error"], rel=1e-12)


@pytest.mark.slow
def test_the_command_writes_the_stored_tables(tmp_path):
    """The whole scenario again (about 40 min on 2 processes): leakage.csv, runs.csv and points.csv
    byte for byte."""
    from dpgossip.cli import main

    out = tmp_path / "paper-fig3"
    assert main(["run", str(SCENARIO), "--out", str(out), "--no-plots", "-q", "--workers", "2"]) == 0
    for name in ("leakage.csv", "runs.csv", "points.csv"):
        assert (out / name).read_bytes() == (RESULTS / name).read_bytes(), name
