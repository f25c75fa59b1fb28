"""Floor-free D-DP-PM: its conditional audit against a dense linear-Gaussian oracle built from the literal
messages, the search against random neighbours, and audit <= guarantee (docs/floorfree.md)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.privacy.linear_audit import whiten
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, run_floorfree
from dpgossip.protocols.ddppm.floorfree_audit import (
    audit_floorfree,
    conditional_mu2,
    determines_directions,
    leverage,
    worst_neighbour,
)
from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee, floorfree_mu
from tests.conftest import net_from_graph, spiked_data


def _dense_mu2(net, data, res, observer, target, row, x_new):
    """``Delta^T (B B^T)^+ Delta`` of the observer's literal view: every message its neighbours send
    (``e_l^T W^k z~``, ``k < c``) in every iteration and all other agents' ``q^(T)``; its own noise and
    data are known (column ``observer`` of the noise map dropped)."""
    p, W, d = res.params, net.dense_W(), data.d
    senders = sorted(set(net.graph.neighbors(observer)) - {observer})
    K = np.vstack([(np.linalg.matrix_power(W, k))[senders] for k in range(p.consensus_steps)])
    Kn = K.copy()
    Kn[:, observer] = 0.0
    x = data.X[row]
    C = np.outer(x_new, x_new) - np.outer(x, x)
    shifts, blocks = [], []
    for t in range(p.iterations):
        dz = np.zeros((data.m, d))
        dz[target] = C @ res.directions[t, target]
        shifts.append((K @ dz).ravel())
        blocks.append(p.sigma_z * np.kron(Kn, np.eye(d)))
    others = np.setdiff1d(np.arange(data.n), np.arange(data.offsets[observer], data.offsets[observer + 1]))
    dq = np.zeros(data.n)
    dq[row] = (x_new - x) @ res.directions[-1, target]
    shifts.append(dq[others])
    blocks.append(p.sigma_p * np.eye(others.size))
    B = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        B[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    white = whiten(np.concatenate(shifts)[:, None], B)
    assert not white.outside[0]
    return float(white.C[:, 0] @ white.C[:, 0])


@pytest.mark.parametrize("c, observer, target", [(1, 0, 1), (1, 0, 3), (2, 0, 2), (2, 1, 4), (3, 0, 3)])
def test_conditional_mu2_matches_the_dense_view(c, observer, target):
    data = spiked_data(30, 3, [4, 2, 1], 6, seed=2)
    net = net_from_graph(nx.cycle_graph(6))
    res = run_floorfree(data, net, FloorFreeParams(iterations=3, consensus_steps=c,
                                                   noise_multiplier=1.3), seed=4)
    kappa = leverage(net, c, "observer", target, (observer,))
    rng = np.random.default_rng(c + target)
    for row in (data.offsets[target], data.offsets[target] + 2):
        x_new = rng.standard_normal(3)
        x_new *= 0.9 / np.linalg.norm(x_new)
        ours = conditional_mu2(data.X[row], x_new, res.directions[:, target], kappa=kappa,
                               sigma_z=res.params.sigma_z, sigma_p=res.params.sigma_p)
        assert ours == pytest.approx(_dense_mu2(net, data, res, observer, target, row, x_new),
                                     rel=1e-9, abs=1e-13)
    assert 0.0 <= kappa <= 1.0 + 1e-12
    if c == 1 and target == 3:
        assert kappa == pytest.approx(0.0, abs=1e-12)          # two hops away, one round: unseen


def test_search_beats_random_neighbours_and_stays_below_the_certified_bound():
    rng = np.random.default_rng(5)
    T, d = 3, 3
    U = rng.standard_normal((T + 1, d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    for bounded in (True, False):
        x = rng.standard_normal(d)
        x *= 0.6 / np.linalg.norm(x)
        best, y = worst_neighbour(x, U, kappa=0.8, sigma_z=1.0, sigma_p=1.0, bounded=bounded)
        assert y @ y <= 1 + 1e-9 and (not bounded or (y - x) @ (y - x) <= 1 + 1e-9)
        assert best == pytest.approx(conditional_mu2(x, y, U, kappa=0.8, sigma_z=1.0, sigma_p=1.0))
        Y = rng.standard_normal((4000, d))
        Y *= (rng.uniform(0, 1, 4000) ** (1 / d) / np.linalg.norm(Y, axis=1))[:, None]
        if bounded:
            Y = Y[np.linalg.norm(Y - x, axis=1) <= 1]
        sampled = max(conditional_mu2(x, v, U, kappa=0.8, sigma_z=1.0, sigma_p=1.0) for v in Y)
        assert sampled <= best + 1e-9
        assert best <= 0.8 * T + (1.0 if bounded else 4.0) + 1e-12


def test_audit_is_below_the_guarantee_and_falls_to_zero():
    data = spiked_data(12, 4, [3, 2, 1, 0.5], 4, seed=1)
    net = net_from_graph(nx.cycle_graph(4))
    eps = []
    for s in (1.0, 10.0, 100.0):
        params = FloorFreeParams(iterations=3, consensus_steps=2, noise_multiplier=s)
        pairs = audit_floorfree(data, net, run_floorfree(data, net, params, seed=0), delta=1e-5,
                                observers=[0], restarts=0)
        g = floorfree_guarantee(params, 1e-5, pld=s == 10.0)
        assert len(pairs) == 3
        for pr in pairs:
            assert pr.epsilon <= pr.epsilon_upper <= g.epsilon_gdp * (1 + 1e-9) <= g.epsilon_rdp
            assert pr.mu_upper <= floorfree_mu(params) * (1 + 1e-12)
        if s == 10.0:
            assert g.epsilon_gdp <= g.epsilon_pld + 1e-6
        eps.append(max(pr.epsilon for pr in pairs))
    assert eps[0] > eps[1] > eps[2] and eps[2] < 0.05


def test_guarantee_is_the_composed_gaussian():
    params = FloorFreeParams(iterations=5, consensus_steps=5, noise_multiplier=9.0)
    g = floorfree_guarantee(params, 1e-5, pld=False)
    assert g.iterations == 6
    assert g.epsilon_gdp == pytest.approx(gaussian_mechanism_epsilon(math.sqrt(6) / 9.0, 1e-5), rel=1e-6)
    assert floorfree_guarantee(FloorFreeParams(iterations=5, consensus_steps=5, noise_multiplier=0.0),
                               1e-5, pld=False).epsilon_gdp == math.inf


def test_views_and_their_leverage(paper_ring):
    data = spiked_data(20, 3, [3, 1, 0.5], 4)
    params = FloorFreeParams(iterations=2, consensus_steps=5, noise_multiplier=2.0, disseminate=False)
    res = run_floorfree(data, paper_ring, params, seed=0)
    eav = audit_floorfree(data, paper_ring, res, view="eavesdropper", restarts=0)
    obs = audit_floorfree(data, paper_ring, res, view="observer", observers=[0], restarts=0)
    coal = audit_floorfree(data, paper_ring, res, view="coalition", observers=[0, 2], restarts=0)
    assert [p.target for p in eav] == [0, 1, 2, 3] and all(p.leverage == 1.0 for p in eav)
    assert [p.target for p in coal] == [1, 3]
    for p in obs:                          # the paper's ring, c = 5: an observer isolates every z~_j
        assert p.leverage == pytest.approx(1.0) and p.exact
        assert p.mu_upper == pytest.approx(math.sqrt(2) / 2.0)
    assert all(p.exact for p in eav + coal)


def test_a_partial_view_is_flagged_and_bounded_by_the_guarantee():
    data = spiked_data(18, 3, [3, 1, 0.5], 6)
    net = net_from_graph(nx.cycle_graph(6))
    params = FloorFreeParams(iterations=2, consensus_steps=1, noise_multiplier=2.0)
    res = run_floorfree(data, net, params, seed=0)
    pairs = {p.target: p for p in audit_floorfree(data, net, res, observers=[0], restarts=0)}
    assert not determines_directions(net, 1, "observer", [0])
    assert determines_directions(net, 3, "observer", [0])
    assert pairs[3].leverage == 0.0 and not pairs[3].exact
    assert pairs[3].mu_upper == pytest.approx(floorfree_mu(params))


def test_bad_audit_requests_name_their_field(paper_ring):
    from dpgossip.errors import ConfigError

    data = spiked_data(8, 2, [1, 0.5], 4)
    res = run_floorfree(data, paper_ring, FloorFreeParams(iterations=1, consensus_steps=1,
                                                          noise_multiplier=1.0), seed=0)
    for kwargs, field in (({"observers": [4]}, "observers"), ({"targets": [9]}, "targets"),
                          ({"view": "coalition", "observers": []}, "observers"), ({"view": "paper"}, "view")):
        with pytest.raises(ConfigError) as err:
            audit_floorfree(data, paper_ring, res, **kwargs)
        assert err.value.field == field
    silent = run_floorfree(data, paper_ring, FloorFreeParams(iterations=1, consensus_steps=1,
                                                             noise_multiplier=0.0), seed=0)
    with pytest.raises(ConfigError):
        audit_floorfree(data, paper_ring, silent)


def test_screened_rows_are_the_best_pulled_in_start_and_the_screened_audit_is_attained():
    """screen_rows against conditional_mu2 at worst_neighbour's own starts; the screened audit with
    every row climbed equals the full search, and with fewer rows stays between screen and full."""
    from dpgossip.protocols.ddppm.floorfree_audit import _pull_in, screen_rows

    data = spiked_data(24, 4, [3, 2, 1, 0.5], 4, seed=3)
    net = net_from_graph(nx.cycle_graph(4))
    res = run_floorfree(data, net, FloorFreeParams(iterations=3, consensus_steps=2,
                                                   noise_multiplier=2.0), seed=1)
    p = res.params
    for bounded in (True, False):
        U = res.directions[:, 1]
        rows = data.X[data.offsets[1]:data.offsets[2]]
        got = screen_rows(rows, U, kappa=0.7, sigma_z=p.sigma_z, sigma_p=p.sigma_p, bounded=bounded)
        for x, value in zip(rows, got, strict=True):
            starts = [s * u for u in U for s in (1.0, -1.0)] + [-x]
            want = max(conditional_mu2(x, _pull_in(x, y / np.linalg.norm(y), bounded), U, kappa=0.7,
                                       sigma_z=p.sigma_z, sigma_p=p.sigma_p) for y in starts)
            assert value == pytest.approx(want, rel=1e-9)
    full = audit_floorfree(data, net, res, view="eavesdropper", restarts=1)
    every = audit_floorfree(data, net, res, view="eavesdropper", restarts=1, rows=data.n)
    few = audit_floorfree(data, net, res, view="eavesdropper", restarts=1, rows=2)
    for a, b, c in zip(full, every, few, strict=True):
        assert b.mu == pytest.approx(a.mu, rel=1e-9) and c.mu <= a.mu * (1 + 1e-9)
        assert c.mu <= c.mu_upper
        lo, hi = data.offsets[c.target], data.offsets[c.target + 1]
        assert lo <= c.row < hi


@pytest.mark.parametrize("graph, c, receivers", [(nx.path_graph(6), 2, [0]), (nx.cycle_graph(7), 3, [2]),
                                                  (nx.cycle_graph(8), 2, [0, 3])])
def test_the_leverage_is_the_unit_gain_of_the_literal_message_release(graph, c, receivers):
    # kappa_j = ||b_j||^2 from the orthonormal basis equals the generic auditor's g_j of the release built
    # from the literal messages e_l^T W^k (k < c) of the receivers' senders, the receivers' own input and
    # noise known (their columns removed), unit noise on every other agent's z~
    from dpgossip.privacy.linear_audit import unit_shift_gains
    from dpgossip.privacy.linear_release import LinearGaussianRelease

    net = net_from_graph(graph)
    W = net.dense_W()
    senders = sorted({v for r in receivers for v in net.graph.neighbors(r)} - set(receivers))
    K = np.vstack([np.linalg.matrix_power(W, k)[senders] for k in range(c)])
    unknown = np.setdiff1d(np.arange(net.m), receivers)
    release = LinearGaussianRelease(J=K[:, unknown], B=K[:, unknown], targets=unknown,
                                    columns=np.arange(unknown.size))
    gains = unit_shift_gains(release)
    view = "observer" if len(receivers) == 1 else "coalition"
    for j, g in zip(unknown.tolist(), gains.tolist(), strict=True):
        assert leverage(net, c, view, j, receivers) == pytest.approx(g, abs=1e-10)
