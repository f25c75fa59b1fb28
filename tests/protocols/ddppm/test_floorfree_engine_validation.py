"""The floor-free D-DP-PM's audit (:mod:`dpgossip.protocols.ddppm.floorfree_audit`) validated against the
engine, from its transcript only: (1) what an observer receives is the audit's mean given the directions plus
``sigma_z K e`` (gossip) and ``p`` (flood), to 1e-10, and its leverage ``kappa_j`` is the audit's;
(2) the whitened view is standard normal over fixed seeds; (3) a likelihood-ratio attack (``T = 1``, where
the view is exactly Gaussian) attains the audit's ``mu`` and stays below its epsilon."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.attack import likelihood_ratio_attack
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, run_floorfree
from dpgossip.protocols.ddppm.floorfree_audit import audit_floorfree, conditional_mu2, leverage
from dpgossip.protocols.ddppm.floorfree_nodes import FLOOD, run_floorfree_engine
from dpgossip.protocols.ddppm.transcript_view import floorfree_view_residual
from tests.conftest import net_from_graph
from tests.engine.conftest import data_for, grid3
from tests.protocols.ppm.test_engine_validation import _check_standard_normal, whitener

LOSSY = {"latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.3, "retransmit_timeout": 0.05}
NETS = {"ring5": lambda: net_from_graph(nx.cycle_graph(5), "ring5"), "grid3": grid3}
DELTA = 1e-5


def senders_and_K(net, own: tuple[int, ...], c: int) -> tuple[list[int], np.ndarray]:
    """The senders to the observers ``own`` and the rows ``e_l^T W^(k-1)`` (round ``k``, sender ``l``)."""
    senders = sorted({int(l) for o in own for l in net.graph.neighbors(o)} - set(own))
    W = net.dense_W()
    return senders, np.vstack([np.linalg.matrix_power(W, k)[senders] for k in range(c)])


def received(res, own: tuple[int, ...], t: int, senders: list[int], c: int) -> np.ndarray:
    """``(c |senders|, d)``: the gossip messages ``own`` received in iteration ``t`` (transcript only)."""
    got = {(r.tag[2], r.src): r.payload for r in res.transcript
           if r.dst in own and r.src not in own and r.tag[:2] == (0, t)}
    return np.stack([got[(k, s)] for k in range(1, c + 1) for s in senders])


def model(data, ref, own: tuple[int, ...], t: int, K: np.ndarray):
    """The audit's view given the directions: ``mean`` (data and the observers' own noise) and the
    unknown noise ``(K_U, e_U)`` with ``e`` from the matrix backend's draws."""
    U = ref.directions[t - 1]
    means = np.stack([data.block(i).T @ (data.block(i) @ U[i]) for i in range(data.m)])
    e, own_ = ref.noise.e[t - 1], list(own)
    others = np.setdiff1d(np.arange(data.m), own_)
    return K @ means + K[:, own_] @ e[own_], K[:, others], e[others]


@pytest.mark.parametrize("name, own", [("ring5", (0,)), ("grid3", (4,)), ("grid3", (0,)),
                                       ("ring5", (0, 2)), ("grid3", (0, 8))])
def test_the_observers_transcript_is_the_audited_view(name, own):
    net, c, T = NETS[name](), 2, 2
    data = data_for(net.m, d=3, rows_per_agent=2, seed=3)
    params = FloorFreeParams(iterations=T, consensus_steps=c, noise_multiplier=0.7)
    res = run_floorfree_engine(data, net, params, 13, conditions=LOSSY)
    ref = run_floorfree(data, net, params, 13)
    senders, K = senders_and_K(net, own, c)
    for t in range(1, T + 1):
        mean, KU, eU = model(data, ref, own, t, K)
        np.testing.assert_allclose(received(res, own, t, senders, c), mean + KU @ eU, rtol=0, atol=1e-10)
    Ko = K.copy()
    Ko[:, list(own)] = 0.0
    view = "observer" if len(own) == 1 else "coalition"
    for j in (j for j in range(net.m) if j not in own):  # the leverage the audit uses, from the same rows
        kappa = Ko[:, j] @ np.linalg.pinv(Ko @ Ko.T) @ Ko[:, j]
        assert kappa == pytest.approx(leverage(net, c, view, j, own), abs=1e-10)
    flood = {r.tag[2]: r.payload for r in res.transcript if r.dst in own and r.tag[0] == FLOOD}
    for j, block in flood.items():
        a, b = data.offsets[j], data.offsets[j + 1]
        np.testing.assert_allclose(block, data.block(j) @ ref.directions[T, j] + ref.noise.p[a:b],
                                   rtol=0, atol=1e-10)
    assert set(flood) >= {j for j in range(net.m) if j not in own}  # (own blocks may come back)
    assert floorfree_view_residual(res, data, net) <= 1e-10  # the kind's check of every message


def _whitened(seeds, o: int = 0) -> np.ndarray:
    net, c, T = NETS["ring5"](), 2, 2
    data = data_for(5, d=2, rows_per_agent=2, seed=3)
    params = FloorFreeParams(iterations=T, consensus_steps=c, noise_multiplier=0.7)
    senders, K = senders_and_K(net, (o,), c)
    out = []
    for seed in seeds:
        res, ref = run_floorfree_engine(data, net, params, seed), run_floorfree(data, net, params, seed)
        for t in range(1, T + 1):
            mean, KU, _ = model(data, ref, (o,), t, K)
            out.append(whitener(KU) @ (received(res, (o,), t, senders, c) - mean) / params.sigma_z)
        q = {r.tag[2]: r.payload for r in res.transcript if r.dst == o and r.tag[0] == FLOOD}
        out += [(q[j] - data.block(j) @ ref.directions[T, j]) / params.sigma_p for j in q if j != o]
    return np.concatenate([x.ravel() for x in out])


def test_the_whitened_view_is_standard_normal():
    _check_standard_normal(_whitened(range(40)))
    _check_standard_normal(_whitened(range(100, 130), o=2))


def _neighbours() -> tuple[PartitionedData, PartitionedData]:
    """``d = 1``; agent 2's first row (global 4) is ``0`` in X and ``1`` in X': ``||C u|| = 1`` for the
    public start ``u^(0) = +-1``, the largest gossip-input shift (``Delta_z = 1``)."""
    X = np.random.default_rng(0).uniform(-0.6, 0.6, (10, 1))
    X[4] = 0.0
    Xp = X.copy()
    Xp[4] = 1.0
    return PartitionedData(X=X, sizes=(2,) * 5, name="x"), PartitionedData(X=Xp, sizes=(2,) * 5, name="x'")


def _attack(runs: int, sigma: float = 0.4):
    net, c, o, j = NETS["ring5"](), 2, 0, 2
    params = FloorFreeParams(iterations=1, consensus_steps=c, noise_multiplier=sigma, disseminate=False)
    D0, D1 = _neighbours()
    senders, K = senders_and_K(net, (o,), c)
    stats_, mus = [], []
    for D in (D0, D1):
        t = []
        for seed in range(runs):
            res, ref = run_floorfree_engine(D, net, params, seed), run_floorfree(D0, net, params, seed)
            mean0, KU, _ = model(D0, ref, (o,), 1, K)   # the attacker's hypothesis X (u^(0) is public)
            Wt = whitener(KU * params.sigma_z)
            w = Wt @ K[:, j] * ref.directions[0, j, 0]   # shift (x' x'^T - x x^T) u^(0) = u^(0)
            mus.append(float(np.linalg.norm(w)))
            t.append([float(w @ (Wt @ (received(res, (o,), 1, senders, c)[:, 0] - mean0[:, 0]))) / mus[-1]])
        stats_.append(np.array(t))
    pair = audit_floorfree(D0, net, ref, view="observer", observers=[o], targets=[j], delta=DELTA)[0]
    kappa = leverage(net, c, "observer", j, (o,))
    exact = np.sqrt(conditional_mu2(np.zeros(1), np.ones(1), ref.directions[:, j], kappa=kappa,
                                    sigma_z=params.sigma_z, sigma_p=None))
    gauss = (np.zeros(1), np.eye(1), np.array([mus[0]]), np.eye(1))
    return likelihood_ratio_attack(stats_[0], stats_[1], gauss, delta=DELTA), np.array(mus), exact, pair


def test_the_attack_attains_the_audited_mu_and_stays_below_its_epsilon():
    attack, mus, exact, pair = _attack(120)
    np.testing.assert_allclose(mus, exact, rtol=1e-9)         # every run: mu = sqrt(kappa) / s
    assert exact <= pair.mu_upper * (1 + 1e-12) and exact == pytest.approx(pair.mu, rel=1e-6)
    assert 0.3 < attack.eps_lb <= pair.epsilon  # 1.72 <= 13.21 (measured)


@pytest.mark.slow
def test_the_attack_with_many_runs_stays_below_the_audited_epsilon():
    attack, _, _, pair = _attack(2000)
    assert 0.2 * pair.epsilon < attack.eps_lb <= pair.epsilon
