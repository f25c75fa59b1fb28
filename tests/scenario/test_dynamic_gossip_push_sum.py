"""Push-sum as a mode of a dynamic-gossip scenario, on directed arcs of the scenario's graph: the engine on
ideal links gives the matrix backend's curves and leakage rows; the estimate ``s / w`` reaches the
average (the values ``s`` alone do not); on lossy links the curves are the engine's own ratio; the
leakage of a pair equals a view built by hand from the column-stochastic matrix; the shipped scenario
runs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from dpgossip.cli import main
from dpgossip.engine.dynamic import run_rounds
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.scenario.dynamic_gossip import mode_record
from dpgossip.scenario.dynamic_gossip_config import load_dynamic_gossip, parse_dynamic_gossip
from dpgossip.scenario.dynamic_gossip_runs import (
    build_setting,
    estimates,
    realise,
    rounds_of,
    stream,
)
from dpgossip.topology.schedule_backend import schedule_trajectory

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"
# a 6-ring with its 2-hop chords (watts_strogatz k = 4, p = 0); arcs: the ring 0 -> 1 -> ... -> 5 -> 0
# and the chord 3 -> 1, so out-degrees differ and A is column- but not row-stochastic
CHORDS = {"topology": "watts_strogatz", "agents": 6, "params": {"k": 4, "p": 0.0}}
ARCS = [[i, (i + 1) % 6] for i in range(6)] + [[3, 1]]


def _config(modes: list[dict], graph: dict = CHORDS, **section: object):
    base = {"sigma": 0.9, "sensitivity": 1.1, "horizon": 5.0, "samples": 1, "seed": 4, "points": 11,
            "observers": "all", "graph": graph, "modes": modes}
    return parse_dynamic_gossip({"name": "push", "dynamic_gossip": {**base, **section}})


def _close(a: dict, b: dict, skip: tuple[str, ...] = ("mode", "note")) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if key in skip:
            continue
        if isinstance(a[key], float):
            assert a[key] == pytest.approx(b[key], rel=1e-10, abs=1e-300), key
        else:
            assert a[key] == b[key], key


@pytest.mark.parametrize("arcs", [ARCS, "cycle"])
def test_the_engine_on_ideal_links_gives_the_matrix_backends_curves_and_leakage(arcs):
    schedule = {"sampler": "push-sum", "arcs": arcs}
    config = _config([{"label": "matrix", "schedule": schedule},
                      {"label": "engine", "schedule": schedule, "conditions": {"drop": 0.0}}])
    setting = build_setting(config)
    matrix, engine = (mode_record(config, setting, i, m) for i, m in enumerate(config.modes))
    assert (matrix["info"]["engine"], engine["info"]["engine"]) == (False, True)
    for name in ("consensus_time", "consensus_messages", "leakage", "pairs"):
        assert len(matrix["tables"][name]) == len(engine["tables"][name]) > 0, name
        for a, b in zip(matrix["tables"][name], engine["tables"][name], strict=True):
            _close(a, b)
    eps = [r["epsilon_max"] for r in matrix["tables"]["pairs"]]
    assert min(eps) < max(eps)   # the rows compared are not all one value
    err = [r["error_mean"] for r in matrix["tables"]["consensus_time"]]
    assert err[-1] < 0.5 * err[0]


def test_the_estimate_s_over_w_reaches_the_average_and_s_alone_does_not():
    config = _config([{"schedule": {"sampler": "push-sum", "arcs": ARCS}}], horizon=60.0)
    setting = build_setting(config)
    record = mode_record(config, setting, 0, config.modes[0])
    curve = record["tables"]["consensus_time"]
    assert curve[-1]["time"] == 60.0 and curve[-1]["error_mean"] < 1e-6
    assert curve[0]["error_mean"] == pytest.approx(np.linalg.norm(setting.x0 - setting.x0.mean()))
    sched = realise(config, setting, 0, config.modes[0], 0)
    s_alone = schedule_trajectory(sched, setting.x0)[-1]
    assert np.linalg.norm(s_alone - setting.x0.mean()) > 0.05   # A is not row stochastic
    np.testing.assert_allclose(estimates(sched, setting.x0)[-1], setting.x0.mean(), atol=1e-6)


def test_a_lossy_engine_run_reports_the_engines_own_biased_ratio():
    """Under drop the curve's last value is the engine's final ``s / w`` (mass lost to a dropped
    message biases it), not the average."""
    mode = {"schedule": {"sampler": "push-sum", "arcs": "cycle"}, "conditions": {"drop": 0.2}}
    config = _config([mode], horizon=40.0, points=5)
    setting = build_setting(config)
    record = mode_record(config, setting, 0, config.modes[0])
    spec, c = config.modes[0].schedule, config.modes[0].conditions
    sampled = spec.sample(setting.network, rounds_of(config, config.modes[0]), stream(config.seed, 1, 0, 0))
    run = run_rounds(sampled, setting.x0, stream(config.seed, 3, 0, 0), period=1.0,
                     conditions=c.engine_table())
    ratio = run.values[:, 0] / run.values[:, 1]
    last = record["tables"]["consensus_time"][-1]
    assert last["error_mean"] == pytest.approx(np.linalg.norm(ratio - setting.x0.mean()), rel=1e-9)
    assert last["error_mean"] > 1e-3                                    # biased by the lost mass
    assert last["disagreement_mean"] < 0.05 * last["error_mean"]        # on a value the agents share
    assert record["info"]["messages_mean"] < 40 * 6                     # dropped messages not counted


def test_the_leakage_of_a_pair_equals_a_view_built_by_hand():
    """Five agents, arcs 0 -> 1 -> 2 -> 3 -> 4 -> 0 and 1 -> 4, two rounds, observer 0. ``A`` is built
    here from the out-degrees (``A_jj = A_ij = 1 / (outdeg(j) + 1)``); round ``t`` sends
    ``A_ij (A^t y^0)_j`` from ``j`` to ``i``; the observer's view is every message from agent 4 (its
    one in-neighbour), ``N(J x, sigma^2 J J^T)`` over the other agents' data."""
    m, arcs, sigma, sens, alpha, delta = 5, [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0], [1, 4]], 0.9, 1.1, \
        2.0, 1e-5
    config = _config([{"schedule": {"sampler": "push-sum", "arcs": arcs}}], horizon=2.0, observers=[0],
                     graph={"topology": "complete", "agents": m}, sigma=sigma, sensitivity=sens)
    setting = build_setting(config)
    rows = {(r["observer"], r["target"]): r for r in
            mode_record(config, setting, 0, config.modes[0])["tables"]["pairs"]}
    A = np.eye(m)
    for j in range(m):
        out = [i for s, i in arcs if s == j]
        A[j, j] = 1.0 / (len(out) + 1)
        A[out, j] = 1.0 / (len(out) + 1)
    assert np.allclose(A.sum(axis=0), 1.0) and not np.allclose(A.sum(axis=1), 1.0)
    J = np.array([A[0, 4] * np.linalg.matrix_power(A, t)[4, 1:] for t in range(2)])  # over y_1..y_4
    assert np.allclose(J, [[0, 0, 0, 1 / 2], [1 / 6, 0, 1 / 4, 1 / 4]])
    for u in range(1, m):
        pair = GaussianPair(np.zeros(2), sigma**2 * J @ J.T, sens * J[:, u - 1], sigma**2 * J @ J.T)
        assert rows[(0, u)]["rdp_max"] == pytest.approx(pair.renyi(alpha), rel=1e-9, abs=1e-14)
        assert rows[(0, u)]["epsilon_max"] == pytest.approx(pair.epsilon(delta), rel=1e-6, abs=1e-12)
    local = alpha * sens**2 / (2 * sigma**2)
    assert rows[(0, 2)]["rdp_max"] == 0.0 and rows[(0, 4)]["rdp_max"] == pytest.approx(local)
    assert 0.0 < rows[(0, 1)]["rdp_max"] < local and 0.0 < rows[(0, 3)]["rdp_max"] < local


def _by_mode(path: Path) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            out.setdefault(r["mode"], []).append(r)
    return out


def test_the_shipped_push_sum_scenario_runs(tmp_path):
    """On the regular ring push-sum on both directions is the averaging W (same curve); the cycle sends
    half the messages; on the cycle observer 0 hears agent 15 once a round, so after 12 rounds it has
    recovered y_4..y_15 (the local-DP level) and learnt nothing of y_1..y_3."""
    path = SHIPPED / "dynamic-gossip-push-sum.toml"
    config = load_dynamic_gossip(path)
    assert config.name == path.stem and config.observers == (0,) and config.horizon == 12.0
    modes = [(m.label, m.schedule.sampler, m.schedule.arcs if m.schedule.sampler == "push-sum" else None,
              m.conditions is not None) for m in config.modes]
    assert modes == [("averaging", "fixed", None, False), ("push-sum-both", "push-sum", "both", False),
                     ("push-sum-cycle", "push-sum", "cycle", False),
                     ("push-sum-cycle-lossy", "push-sum", "cycle", True)]
    out = tmp_path / "res"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    curves = _by_mode(out / "consensus_time.csv")
    assert list(curves) == [m[0] for m in modes]
    for a, b in zip(curves["averaging"], curves["push-sum-both"], strict=True):
        assert float(a["error_mean"]) == pytest.approx(float(b["error_mean"]), rel=1e-9)
        assert a["messages_mean"] == b["messages_mean"]
    sent = {m: float(rows[-1]["messages_mean"]) for m, rows in curves.items()}
    assert sent["push-sum-cycle"] == sent["averaging"] / 2 == 12 * 16
    assert sent["push-sum-cycle-lossy"] < sent["push-sum-cycle"]     # dropped messages not counted
    err = {m: float(rows[-1]["error_mean"]) for m, rows in curves.items()}
    assert err["averaging"] < err["push-sum-cycle"] < float(curves["push-sum-cycle"][0]["error_mean"])
    pairs = _by_mode(out / "pairs.csv")
    for a, b in zip(pairs["averaging"], pairs["push-sum-both"], strict=True):  # A = W: the same view
        assert float(a["rdp_max"]) == pytest.approx(float(b["rdp_max"]), rel=1e-9, abs=1e-12)
    assert {r["schedules"] for r in pairs["push-sum-cycle-lossy"]} == {"20"}
    rdp = {int(r["target"]): float(r["rdp_max"]) for r in pairs["push-sum-cycle"]}
    local = config.alpha * config.sensitivity**2 / (2 * config.sigma**2)
    assert all(rdp[u] == pytest.approx(local, rel=1e-9) for u in range(4, 16))
    assert all(rdp[u] == 0.0 for u in (1, 2, 3))
    for name in ("consensus-time.png", "consensus-messages.png", "leakage-distance.png"):
        assert (out / "plots" / name).stat().st_size > 0
