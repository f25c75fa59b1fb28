"""Warm starts across the points of a sweep (dpgossip.scenario.sweep_neighbours).

Oracles: each point run alone (a sweep of one point: its own search only), which the sweep must never
report less than; the dense reference path (dpgossip.protocols.ddppm.audit.view_pair), which must give
every raised row's exact value for the neighbour the row prints; and the same sweep listed in the
reverse order, which must give the same bits point for point.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from dpgossip.privacy.neighbours import Neighbour
from dpgossip.protocols.ddppm.audit import component_model, view_pair
from dpgossip.protocols.ddppm.views import make_view
from dpgossip.scenario import run_scenario
from dpgossip.scenario.problem import build_problem

from .helpers import small

NOISES = [{"schedule": "constant", "scale": 0.003}, {"schedule": "constant", "scale": 0.03}]
DATA = {"source": "synthetic", "standardize": False,
        "synthetic": {"n": 24, "d": 3, "spectrum": [1.0, 0.8, 0.6]}}


def _scenario(noise):
    return small(repeats=1, data=DATA, protocol={"iterations": 1, "consensus_steps": 1, "noise": noise},
                 privacy={"audit": True, "view": "observer", "search": "quick", "methods": ["rdp"]})


def _leakage(folder: Path) -> list[dict[str, str]]:
    with open(folder / "leakage.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _by_pair(rows):
    return {(int(r["observer"]), int(r["target"])): r for r in rows}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, smallest_search):
    tmp = tmp_path_factory.mktemp("sweep")
    out = run_scenario(_scenario(NOISES), tmp / "sweep", quiet=True)
    alone = [_leakage(run_scenario(_scenario(n), tmp / f"alone{k}", quiet=True))
             for k, n in enumerate(NOISES)]
    return _leakage(out), alone


def test_the_sweep_never_reports_less_than_a_point_alone_and_raises_some(sweep):
    rows, alone = sweep
    raised = 0
    for k, own in enumerate(alone):
        mine = _by_pair(r for r in rows if int(r["point"]) == k)
        assert set(mine) == set(_by_pair(own))
        for key, r in _by_pair(own).items():
            assert float(mine[key]["epsilon"]) >= float(r["epsilon"])
            if float(mine[key]["epsilon"]) > float(r["epsilon"]):
                raised += 1
                assert mine[key]["found_at_point"] == str(1 - k)  # the other point found it
            else:
                assert mine[key] == {**r, "point": str(k), "found_at_point": ""}  # bit for bit
    assert raised > 0


def test_a_raised_row_is_the_value_of_the_neighbour_it_prints(sweep):
    """The dense reference path, on the printed neighbour (full precision), gives the row's epsilon
    (the RDP conversion the scenario asks for)."""
    rows, _ = sweep
    checked = 0
    for r in [r for r in rows if r["found_at_point"]][:6]:
        problem = build_problem(_scenario(NOISES[int(r["point"])]).points()[0].config)
        data, net, params = problem.data, problem.network, problem.params
        nb = Neighbour(row=int(r["row"]), x_new=np.array([float(v) for v in r["replacement"].split()]))
        assert np.linalg.norm(nb.x_new) <= 1 + 1e-12
        assert np.linalg.norm(nb.x_new - data.X[nb.row]) <= 1 + 1e-12
        pair = view_pair(component_model(data, net, params),
                         component_model(data, net, params, X=nb.apply(data.X)),
                         make_view("observer", m=data.m, agents=(int(r["observer"]),)), net)
        assert math.isclose(pair.epsilon(float(r["delta"]), method="rdp"), float(r["epsilon"]),
                            rel_tol=1e-5)
        checked += 1
    assert checked > 0


def test_the_order_of_the_points_does_not_change_a_bit(sweep, tmp_path):
    rows, _ = sweep
    reverse = _leakage(run_scenario(_scenario(NOISES[::-1]), tmp_path / "rev", quiet=True))
    for k in range(len(NOISES)):
        mine = _by_pair(r for r in rows if int(r["point"]) == k)
        theirs = _by_pair(r for r in reverse if int(r["point"]) == len(NOISES) - 1 - k)
        for key, r in mine.items():
            other = dict(theirs[key])
            if other["found_at_point"]:
                other["found_at_point"] = str(len(NOISES) - 1 - int(other["found_at_point"]))
            assert {**other, "point": r["point"]} == r


def test_the_audit_command_raises_the_same_pairs_and_its_worst_pair_follows(sweep, tmp_path):
    """``dpgossip audit`` of the sweep: every pair's value is the run's (the same search, the same
    pass), the matrices hold them, and each point's worst pair is the largest."""
    import json

    from dpgossip.scenario.audit_run import plan_audit, run_audit

    rows, _ = sweep
    run = run_audit(plan_audit(_scenario(NOISES), tmp_path / "audit"), quiet=True)
    pairs = [r for r in csv.DictReader(open(run.out / "pairs.csv", newline="", encoding="utf-8"))]
    worst = json.loads((run.out / "worst.json").read_text(encoding="utf-8"))["points"]
    for k in range(len(NOISES)):
        mine = _by_pair(r for r in rows if int(r["point"]) == k)
        theirs = _by_pair(r for r in pairs if int(r["point"]) == k)
        assert {key: (r["epsilon"], r["found_at_point"]) for key, r in theirs.items()} == \
            {key: (r["epsilon"], r["found_at_point"]) for key, r in mine.items()}
        with open(run.out / f"epsilon_matrix_p{k}.csv", newline="", encoding="utf-8") as f:
            matrix = list(csv.DictReader(f))
        for (o, j), r in mine.items():
            assert matrix[o][f"target_{j}"] == r["epsilon"]
        top = max(mine.values(), key=lambda r: float(r["epsilon"]))
        assert worst[k]["epsilon"]["rdp"] == float(top["epsilon"])
        assert (worst[k]["observer"], worst[k]["target"]) == (int(top["observer"]), int(top["target"]))
