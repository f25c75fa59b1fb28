"""The optimising worst-case search: brute force for d <= 3, a reviewer's attack, nested budgets, the
first-message bound, the projection onto the allowed set."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.data.synthetic import synthetic_data
from dpgossip.errors import ConfigError
from dpgossip.privacy.neighbours import Neighbour, is_neighbour, max_step, project
from dpgossip.protocols.ddppm.audit import AuditOptions, RunAuditor, _view_key, audit_pairs
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.search import SEARCH_PRESETS, SearchSettings
from dpgossip.topology import make_network


def _problem(d: int, *, seed: int = 0, rows: int = 3, T: int = 2, c: int = 2, scale: float = 0.5,
             topology: str = "paper-ring4"):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((4 * rows, d)) * np.linspace(1.0, 0.3, d)
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(rows,) * 4)
    net = make_network(topology) if topology == "paper-ring4" else make_network(topology, agents=4)
    params = resolve_params(data, net, iterations=T, consensus_steps=c,
                            noise=NoiseSchedule(kind="constant", scale=scale))
    return data, net, params


def _grid(d: int, n: int) -> np.ndarray:
    """Points of the closed unit ball: ``n`` directions (a circle, or a Fibonacci sphere) at 4 radii."""
    if d == 2:
        th = np.linspace(0, 2 * np.pi, n, endpoint=False)
        U = np.stack([np.cos(th), np.sin(th)], axis=1)
    else:
        i = np.arange(n) + 0.5
        phi = np.arccos(1 - 2 * i / n)
        th = np.pi * (1 + 5 ** 0.5) * i
        U = np.stack([np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)], axis=1)
    return np.concatenate([f * U for f in (0.4, 0.7, 0.9, 1.0)])


def _grid_max(data, net, params, o: int, j: int, eps: float, n: int) -> float:
    """Brute force: the exact delta(eps) of the observer view at every grid point of every row's
    allowed set (bounded neighbours)."""
    k, v = _view_key("observer", o, j, data.m)
    aud = RunAuditor(data, net, params, {k: v})
    best = 0.0
    for r in range(data.offsets[j], data.offsets[j + 1]):
        for y in _grid(data.d, n):
            if is_neighbour(data.X[r], y):
                best = max(best, aud.pairs(Neighbour(row=r, x_new=y), [k])[k].delta(eps))
    return best


@pytest.mark.parametrize(("d", "seed", "topology", "n", "rows"), [
    pytest.param(2, 0, "paper-ring4", 24, 2, marks=pytest.mark.slow),
    pytest.param(2, 0, "paper-ring4", 72, 3, marks=pytest.mark.slow),
    pytest.param(2, 3, "path", 72, 3, marks=pytest.mark.slow),
    pytest.param(3, 1, "star", 60, 3, marks=pytest.mark.slow)])
def test_default_search_within_one_percent_of_the_grid_maximum(d, seed, topology, n, rows):
    """Brute force. The slow cases (a dense grid, minutes each): ``pytest -m slow``."""
    data, net, params = _problem(d, seed=seed, topology=topology, rows=rows)
    o, j = (0, 2) if topology != "star" else (1, 2)
    grid = _grid_max(data, net, params, o, j, 1.0, n)
    res = audit_pairs(data, net, params, delta=1e-5, epsilons=(1.0,), search="standard",
                      methods=("exact",),
                      options=AuditOptions(rank_by="delta", targets=[j], observers=[o]))
    found = res.results[(o, j)].delta["exact"][0]
    assert found >= 0.99 * grid, (found, grid)
    assert is_neighbour(data.X[res.results[(o, j)].neighbour.row], res.results[(o, j)].neighbour.x_new)


def _reconstruction():
    """A reported search failure, reconstructed: the paper ring, n = 200, d = 5, decreasing singular values,
    T = 5, c = 3, sigma_p = 0.2, observer 0 against target 2 (rows 100-149). Returns the problem and
    the attack's pairs: every row of the target moved along +- the smallest right singular vector of
    X_j at the largest allowed step."""
    raw = synthetic_data(200, 5, [5, 4, 3, 2, 1], rng=np.random.default_rng(5))
    X = np.array(raw.X, dtype=float)
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(50,) * 4)
    net = make_network("paper-ring4")
    params = resolve_params(data, net, iterations=5, consensus_steps=3, sigma_p=[[0.2] * 5])
    k, v = _view_key("observer", 0, 2, 4)
    aud = RunAuditor(data, net, params, {k: v})
    v_min = np.linalg.svd(X[100:150])[2][-1]
    pairs = [aud.pairs(Neighbour(row=r, x_new=X[r] + max_step(X[r], s * v_min) * s * v_min), [k])[k]
             for r in range(100, 150) for s in (1, -1)]
    return data, net, params, pairs


def test_default_search_beats_the_smallest_singular_direction_attack():
    """A reported search failure, reconstructed: the paper ring, n = 200, d = 5, decreasing singular values,
    T = 5, c = 3, sigma_p = 0.2, observer 0 against target 2. The candidate search reports delta(5) below
    0.01; moving a row along the smallest right singular vector of X_j gives about 0.33."""
    data, net, params, pairs = _reconstruction()
    attack = max(p.delta(5.0) for p in pairs)
    assert attack > 0.3
    res = audit_pairs(data, net, params, delta=1e-5, epsilons=(5.0,), search="standard",
                      methods=("exact",),
                      options=AuditOptions(rank_by="delta", targets=[2], observers=[0]))
    r = res.results[(0, 2)]
    assert r.delta["exact"][0] >= attack
    ev = r.evidence
    assert ev.rows_screened == 50 and len(ev.level_values) == SEARCH_PRESETS["standard"]
    assert 0 < ev.first_message_bound <= r.delta["exact"][0]


@pytest.mark.slow
def test_epsilon_mode_beats_the_smallest_singular_direction_attack():
    """The same reconstruction in epsilon mode (exact epsilon at delta = 1e-5). On this instance the
    attack's best rows give epsilon about 48 (the 78.3 first reported was measured on data we cannot rebuild
    exactly; its delta(5) there was 0.55 against 0.33 here), so the search is held to the attack on
    the same instance: the exact epsilon of the attack's three best rows by delta(5)."""
    data, net, params, pairs = _reconstruction()
    top = sorted(pairs, key=lambda p: -p.delta(5.0))[:3]
    attack = max(p.epsilon(1e-5) for p in top)
    assert attack > 45
    res = audit_pairs(data, net, params, delta=1e-5, epsilons=(5.0,), search="standard",
                      methods=("exact",),
                      options=AuditOptions(rank_by="epsilon", targets=[2], observers=[0]))
    assert res.results[(0, 2)].epsilon["exact"] >= attack


@pytest.mark.parametrize(("d", "seed", "rank_by", "levels_tried", "method"), [
    (2, 0, "delta", (1, 2, 3), "rdp"),  # rdp: cheap conversions, the same search
    (3, 2, "delta", (1, 2, 3), "rdp"),
    (2, 4, "epsilon", (1, 2, 3), "rdp"),
    pytest.param(2, 0, "delta", (1, 2, 3), "exact", marks=pytest.mark.slow),
    pytest.param(3, 2, "delta", (1, 2, 3), "exact", marks=pytest.mark.slow),
    pytest.param(2, 4, "epsilon", (1, 2, 3), "exact", marks=pytest.mark.slow)])
def test_larger_budgets_never_report_less(d, seed, rank_by, levels_tried, method):
    data, net, params = _problem(d, seed=seed, rows=4, scale=0.3, T=3)
    values = []
    for levels in levels_tried:
        res = audit_pairs(data, net, params, delta=1e-3, epsilons=(1.0,), search=levels,
                          methods=(method,), seed=3,
                          options=AuditOptions(rank_by=rank_by, targets=[1], observers=[0, 3]))
        values.append(np.array([res.results[(o, 1)].delta[method][0] if rank_by == "delta"
                                else res.results[(o, 1)].epsilon[method] for o in (0, 3)]))
        for o in (0, 3):  # the evidence of a level-L search starts with the lower levels' values
            lv = res.results[(o, 1)].evidence.level_values
            assert len(lv) == levels and all(b >= a for a, b in zip(lv, lv[1:], strict=False))
    assert all(np.all(b >= a) for a, b in zip(values, values[1:], strict=False))


def test_search_value_at_least_the_first_message_bound_and_settings_errors():
    data, net, params = _problem(2, seed=5, T=3, c=3)
    res = audit_pairs(data, net, params, delta=1e-3, epsilons=(1.0,), search="quick",
                      methods=("exact",),
                      options=AuditOptions(rank_by="delta", targets=[0], observers=[1, 2]))
    for r in res.results.values():
        assert 0 < r.evidence.first_message_bound <= r.delta["exact"][0] * (1 + 1e-9)
        row = r.rows(res.epsilons, res.delta)[0]
        assert row["estimate"].startswith("lower estimate") and row["search"] == "quick"
    with pytest.raises(ConfigError, match="^search must be one of quick, standard"):
        SearchSettings.of("thoruogh")
    with pytest.raises(ConfigError, match="levels must be in 1..8"):
        SearchSettings.of(0)


@pytest.mark.parametrize("kind", ["bounded", "replace-one"])
def test_projection_is_the_nearest_allowed_point(kind):
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = int(rng.integers(2, 5))
        x = rng.standard_normal(d)
        x *= rng.uniform(0, 1) / np.linalg.norm(x)
        y = 2 * rng.standard_normal(d)
        p = project(x, y, kind)
        assert is_neighbour(x, p, kind, tol=1e-9)
        assert np.allclose(project(x, p, kind), p)  # idempotent
        # no sampled allowed point is nearer (sampling the set densely around p)
        Z = p + 0.3 * rng.standard_normal((400, d))
        ok = np.array([is_neighbour(x, z, kind) for z in Z])
        assert np.all(np.linalg.norm(Z[ok] - y, axis=1) >= np.linalg.norm(p - y) - 1e-9)


def test_readme_wine_number():
    """The README's under-reporting example: paper-fig2-wine's 'met' noise at (100, 0.002)."""
    from pathlib import Path

    from dpgossip.data import load_dataset

    net = make_network("paper-ring4")
    data = load_dataset("wine", agents=4)
    params = resolve_params(data, net, iterations=5, consensus_steps=5,
                            noise=NoiseSchedule(kind="constant", scale=0.0287))
    res = audit_pairs(data, net, params, delta=0.002, epsilons=(100.0,), search="quick",
                      methods=("exact",),
                      options=AuditOptions(targets=[0], observers=[1], rank_by="delta"))
    found = res.results[(1, 0)].delta["exact"][0]
    assert found >= 0.32  # the reported case: row 0 along the smallest singular vector of X_0 gives 0.323
    readme = (Path(__file__).resolve().parents[3] / "docs" / "audit-search.md").read_text(encoding="utf-8")
    assert f"quick search finds delta(100) = {found:.3g}" in readme


def test_the_same_result_on_any_number_of_processes():
    """Each target's search reseeds its streams, so two processes give exactly the serial result."""
    data, net, params = _problem(2, seed=1, rows=3, T=2)
    kw = dict(delta=1e-3, epsilons=(1.0,), search="quick", methods=("rdp",),
              seed=4)  # rdp: cheap conversions, same search
    opts = AuditOptions(rank_by="delta", targets=[0, 2], observers=[1, 3])
    one = audit_pairs(data, net, params, options=opts, **kw)
    two = audit_pairs(data, net, params, options=replace(opts, workers=2), **kw)
    assert list(one.results) == list(two.results)
    for key, r in one.results.items():
        s = two.results[key]
        assert r.delta == s.delta and r.renyi2 == s.renyi2
        assert r.neighbour.row == s.neighbour.row
        assert np.array_equal(r.neighbour.x_new, s.neighbour.x_new)
        assert r.evidence.level_values == s.evidence.level_values
    with pytest.raises(ConfigError, match="workers must be an integer >= 1"):
        audit_pairs(data, net, params, options=replace(opts, workers=0), **kw)


def tiny_ring_with_infinite_pairs():
    """Synthetic 8 x 2 data on a 4-ring, c = 1, T = 2, constant noise 1: target 2's ring neighbours
    see its first message with a covariance of another support (an infinite divergence)."""
    from dpgossip.scenario import Scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem
    from dpgossip.scenario.schema import validate

    raw = {"name": "tiny", "seed": 1,
           "data": {"source": "synthetic", "standardize": False,
                    "synthetic": {"n": 8, "d": 2, "spectrum": [1.0, 0.8]}},
           "network": {"topology": "ring", "agents": 4},
           "protocol": {"iterations": 2, "consensus_steps": 1,
                        "noise": {"schedule": "constant", "scale": 1.0}}}
    sc = Scenario(validate(raw), None, raw)
    point = sc.points()[0]
    return resolve_problem(point.config, build_structure(point.config, sc.base))


def test_an_ascent_onto_an_infinite_divergence_neighbour_keeps_it_and_takes_no_nan_gradient():
    """Synthetic 8 x 2 data on a 4-ring, c = 1, search level 1, seed 1: the first-message ascent of
    target 2 steps onto a neighbour of infinite value (an eigenvalue 0 of the sub-view). The search keeps
    it as the best and takes no finite difference from it (``inf - inf``: a RuntimeWarning before); the
    two pairs it reports infinite are infinite by the exact hockey-stick of the full view too (another
    computation)."""
    import math
    import warnings

    pb = tiny_ring_with_infinite_pairs()
    kw = dict(delta=1e-5, epsilons=(50.0,), search=1, seed=1, epsilon_cap=None)  # no cap: the ascent
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        audit = audit_pairs(pb.data, pb.network, pb.params, methods=("rdp",),
                            options=AuditOptions(targets=[2]), **kw)
    infinite = {k for k, r in audit.results.items() if math.isinf(r.epsilon["rdp"])}
    assert infinite == {(1, 2), (3, 2)}  # the target's two ring neighbours see its first message
    exact = audit_pairs(pb.data, pb.network, pb.params, methods=("exact",),  # the finite pair's
                        options=AuditOptions(targets=[2], observers=[1, 3]), **kw)  # exact is slow
    assert all(math.isinf(r.epsilon["exact"]) for r in exact.results.values())
