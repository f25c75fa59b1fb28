"""The ppm audits against the engine (docs/engine.md, power method; as test_validation_engine.py does for
D-DP-PM): the views are rebuilt from the messages the observers actually received in the engine's
transcript, never from the auditor's own arrays.

1. Exactness: a single agent's or a coalition's received messages of ppm-gossip are the linear view of
   :mod:`dpgossip.protocols.ppm.gossip_audit` (``R S^(0)`` with ``S^(0) = x + n z + tau E m``: its mean given
   the data and the iterates, plus its noise terms) for the same seed; the server's sum of
   ``ppm-federated`` is the release ``A V + G`` of :mod:`dpgossip.protocols.ppm.audit`.
2. Distribution: over many seeds, the observed view minus its mean, whitened by the audit's covariance
   ``B B^T``, is standard normal (and the server's release whitened by ``Delta_l sigma``).
3. Attack: the Neyman-Pearson test between two neighbouring datasets on the engine's views; its
   Clopper-Pearson epsilon lower bound stays below the audited epsilon.
4. Masks: a coalition holding both ends of an edge removes that edge's mask from every message it
   receives and sees exactly what an unmasked run sends.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.attack import likelihood_ratio_attack
from dpgossip.protocols.gossip.linear import senders_of
from dpgossip.protocols.ppm.central import PpmParams
from dpgossip.protocols.ppm.gossip import PpmGossipParams
from dpgossip.protocols.ppm.gossip_audit import audit_ppm_gossip, coalition_view, incidence
from dpgossip.protocols.ppm.nodes import run_ppm_engine
from dpgossip.protocols.ppm.transcript_view import gossip_view_residual, star_view_residual
from tests.conftest import net_from_graph
from tests.engine.conftest import data_for, grid3

NETS = {"ring5": lambda: net_from_graph(nx.cycle_graph(5), "ring5"), "grid3": grid3}


def received(res, observers, l: int, c: int, net) -> np.ndarray:
    """``(c * |senders|, d p)``: what the coalition received at iteration ``l``, rows ``(round, sender)``
    in the order of ``coalition_view(..., basis="messages")``, from the transcript only."""
    got = {(r.tag[2], r.src): r.payload.ravel() for r in res.transcript
           if r.tag[1] == l and r.dst in observers and r.src not in observers}
    senders = senders_of(net, tuple(observers))
    return np.stack([got[(k, int(w))] for k in range(1, c + 1) for w in senders])


def model(data, run, view, l: int):
    """The audit's linear model of ``view`` at iteration ``l`` (per coordinate): the mean given the data,
    the iterates and what the observers know, the noise matrix ``B`` and the realised latent ``w``."""
    R, s = view.rows, view.rows.shape[1]
    V = run.iterates[l - 1]
    x = np.stack([data.block(i).T @ (data.block(i) @ V[i]) for i in range(s)]).reshape(s, -1)
    n, tau = run.noise_std[l - 1], run.params.mask_std
    K = np.array(view.known_agents, dtype=int)
    U = np.setdiff1d(np.arange(s), K)
    E, F = incidence(view.edges, s), ~view.known_masks
    z = run.noise[l - 1].reshape(s, -1) / n[:, None]
    m = run.masks[l - 1].reshape(len(view.edges), -1) / (tau if tau > 0 else 1.0)
    known = R[:, K] @ (x[K] + n[K, None] * z[K]) + tau * (R @ E[:, ~F]) @ m[~F]
    B = np.hstack([R[:, U] * n[U], tau * (R @ E[:, F])])
    return R[:, U] @ x[U] + known, B, np.vstack([z[U], m[F]])


def whitener(B: np.ndarray) -> np.ndarray:
    """``Lambda^{-1/2} Q^T`` of ``B B^T = Q Lambda Q^T`` on its range."""
    lam, Q = np.linalg.eigh(B @ B.T)
    keep = lam > 1e-10 * lam.max()
    return (Q[:, keep] / np.sqrt(lam[keep])).T


def _gossip(net, c=2, mask_std=1.5, L=2, sigma=1.0, p=2):
    return PpmGossipParams(ppm=PpmParams(p=p, k=1, iterations=L, noise_multiplier=sigma),
                           consensus_steps=c, mask_std=mask_std)


# --- 1. exactness ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, observers", [("ring5", (0,)), ("ring5", (1, 3)), ("grid3", (4,)),
                                             ("grid3", (0, 8))])
def test_received_messages_are_the_audited_linear_view(name, observers):
    net = NETS[name]()
    data = data_for(net.m, d=4, rows_per_agent=2, seed=3)
    params = _gossip(net, c=3)
    res = run_ppm_engine("ppm-gossip", data, net, params, 21,
                         conditions={"latency": {"kind": "uniform", "low": 0.0, "high": 0.01}})
    view = coalition_view(net, 3, observers, basis="messages")
    for l in (1, 2):
        mean, B, w = model(data, res.result, view, l)
        seen = received(res, observers, l, 3, net)
        scale = np.abs(seen).max()
        np.testing.assert_allclose(seen, mean + B @ w, rtol=0, atol=1e-10 * scale)
    assert gossip_view_residual(res, data, net) <= 1e-10  # the kind's check of every message


def test_the_federated_servers_sum_is_the_central_release():
    data = data_for(6, d=4, rows_per_agent=2, seed=3)
    ppm = PpmParams(p=2, k=2, iterations=3, noise_multiplier=0.7)
    res = run_ppm_engine("ppm-federated", data, None, ppm, 8)
    A = data.X.T @ data.X
    for l in range(1, 4):
        sum_up = sum(r.payload for r in res.transcript if r.tag == (0, l, 1))
        V = next(r.payload for r in res.transcript if r.tag == (0, l - 1, 2))
        np.testing.assert_allclose(sum_up, A @ V + res.result.noise[l - 1], rtol=0, atol=1e-10)
    assert star_view_residual(res, data) <= 1e-10  # the kind's check of the server's view


# --- 2. distribution -----------------------------------------------------------------------------------
def _whitened_gossip(seeds, observers=(0,)) -> np.ndarray:
    net = NETS["ring5"]()
    data = data_for(5, d=3, rows_per_agent=2, seed=3)
    params = _gossip(net, c=2, L=2, p=1)
    view = coalition_view(net, 2, observers, basis="messages")
    out = []
    for seed in seeds:
        res = run_ppm_engine("ppm-gossip", data, net, params, seed)
        for l in (1, 2):
            mean, B, _ = model(data, res.result, view, l)
            out.append(whitener(B) @ (received(res, observers, l, 2, net) - mean))
    return np.concatenate([o.ravel() for o in out])


def _whitened_server(seeds) -> np.ndarray:
    data = data_for(4, d=3, rows_per_agent=2, seed=3)
    ppm = PpmParams(p=1, k=1, iterations=2, noise_multiplier=0.9)
    A, out = data.X.T @ data.X, []
    for seed in seeds:
        res = run_ppm_engine("ppm-federated", data, None, ppm, seed)
        for l in (1, 2):
            sum_up = sum(r.payload for r in res.transcript if r.tag == (0, l, 1))
            V = res.traces[0].iterates[l - 1]  # what client 0 received: X^(l-1)
            out.append((sum_up - A @ V) / res.result.noise_std[l - 1])
    return np.concatenate([o.ravel() for o in out])


def _check_standard_normal(z: np.ndarray) -> None:
    assert stats.kstest(z, "norm").pvalue > 1e-3
    chi2 = float(np.sum(z**2))
    assert stats.chi2.sf(chi2, z.size) > 1e-3 and stats.chi2.cdf(chi2, z.size) > 1e-3
    assert abs(z.mean()) < 5 / np.sqrt(z.size)


def test_the_whitened_views_are_standard_normal():
    _check_standard_normal(_whitened_gossip(range(60)))
    _check_standard_normal(_whitened_gossip(range(100, 130), observers=(1, 3)))
    _check_standard_normal(_whitened_server(range(80)))


@pytest.mark.slow
def test_the_whitened_views_are_standard_normal_over_many_seeds():
    _check_standard_normal(_whitened_gossip(range(1000, 1600)))
    _check_standard_normal(_whitened_gossip(range(2000, 2400), observers=(1, 3)))
    _check_standard_normal(_whitened_server(range(3000, 4000)))


# --- 3. likelihood-ratio attack --------------------------------------------------------------------------
def _neighbours() -> tuple[PartitionedData, PartitionedData]:
    """Agent 1 (rows 2, 3) of 5 on a ring; row 2 is ``e1`` in X and ``e2`` in X': ``||C V||_F = 1`` for any
    unit ``V`` in the plane (d = 2, p = 1), the row-replacement sensitivity the audit uses."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 2))
    X /= 1.5 * np.linalg.norm(X, axis=1, keepdims=True)
    X[2] = [1.0, 0.0]
    Xp = X.copy()
    Xp[2] = [0.0, 1.0]
    return PartitionedData(X=X, sizes=(2,) * 5, name="x"), PartitionedData(X=Xp, sizes=(2,) * 5, name="x'")


def _attack(runs: int):
    net = NETS["ring5"]()
    params = _gossip(net, c=2, mask_std=0.5, L=1, sigma=1.2, p=1)
    D0, D1 = _neighbours()
    view = coalition_view(net, 2, (0,), basis="messages")
    stats_ = []
    for data in (D0, D1):
        t = []
        for seed in range(runs):
            res = run_ppm_engine("ppm-gossip", data, net, params, seed)
            mean0, B, _ = model(D0, res.result, view, 1)  # the attacker's hypothesis: X
            mean1, _, _ = model(D1, res.result, view, 1)
            shift, Wt = (mean1 - mean0).ravel(), np.kron(whitener(B), np.eye(mean0.shape[1]))
            obs = (received(res, (0,), 1, 2, net) - mean0).ravel()
            mu = np.linalg.norm(Wt @ shift)
            t.append([(Wt @ shift) @ (Wt @ obs) / mu])
        stats_.append(np.array(t))
    audit = audit_ppm_gossip(res.result, coalition_view(net, 2, (0,)), delta=1e-5)
    leak = next(x for x in audit.leakages if x.target == 1)
    pair = (np.zeros(1), np.eye(1), np.array([leak.mu]), np.eye(1))
    return likelihood_ratio_attack(stats_[0], stats_[1], pair, delta=1e-5), leak, mu


def _check_tradeoff(attack, mu: float) -> None:
    """The held-out error rates are those of the exact Gaussian trade-off of ``mu``: the test says X' iff
    ``L = mu^2/2 - mu t < threshold``, i.e. ``t > a``, so ``FPR = 1 - Phi(a)`` and ``FNR = Phi(a - mu)``."""
    a = (mu**2 / 2 - attack.threshold) / mu
    for k, n, rate in ((attack.fp, attack.n0, stats.norm.sf(a)),
                       (attack.fn, attack.n1, stats.norm.cdf(a - mu))):
        ci = stats.binomtest(k, n).proportion_ci(0.999)
        assert ci.low <= rate <= ci.high


def test_the_attack_on_the_engine_stays_below_the_audited_epsilon():
    attack, leak, mu = _attack(200)
    assert mu == pytest.approx(leak.mu, rel=1e-9)  # the pair attains the audited sensitivity
    assert 0.5 < attack.eps_lb <= leak.epsilon  # 1.08 <= 7.02 (measured)
    _check_tradeoff(attack, leak.mu)


@pytest.mark.slow
def test_the_attack_with_many_runs_stays_below_the_audited_epsilon():
    attack, leak, _ = _attack(3000)
    assert 0.3 * leak.epsilon < attack.eps_lb <= leak.epsilon  # 2.51 <= 7.02 (measured)
    _check_tradeoff(attack, leak.mu)


# --- 4. masks ---------------------------------------------------------------------------------------------
def test_a_coalition_holding_both_ends_of_an_edge_sees_the_unmasked_messages():
    net = NETS["ring5"]()
    data = data_for(5, d=4, rows_per_agent=2, seed=3)
    masked = run_ppm_engine("ppm-gossip", data, net, _gossip(net, c=3, mask_std=40.0), 6)
    plain = run_ppm_engine("ppm-gossip", data, net, _gossip(net, c=3, mask_std=0.0), 6)
    coalition = (0, 2, 4)  # on the ring 0-1-2-3-4-0 every edge has an end in {0, 2, 4}
    view = coalition_view(net, 3, coalition, basis="messages")
    assert view.known_masks.all()
    E = incidence(view.edges, 5)
    for l in (1, 2):
        M = masked.result.masks[l - 1].reshape(len(view.edges), -1)  # the coalition derives every mask
        unmasked = received(masked, coalition, l, 3, net) - view.rows @ (E @ M)
        # the unmasked messages given this run's iterates: R (x + n z), no mask term
        V, noise = masked.result.iterates[l - 1], masked.result.noise[l - 1]
        x = np.stack([data.block(i).T @ (data.block(i) @ V[i]) + noise[i] for i in range(5)])
        np.testing.assert_allclose(unmasked, view.rows @ x.reshape(5, -1), rtol=0, atol=1e-10)
    # iteration 1 starts from the same X^0 in both runs: literally the unmasked run's messages (later
    # iterations differ: with finite c the masks do not cancel in each agent's own state S_i^(c))
    np.testing.assert_allclose(received(masked, coalition, 1, 3, net) - view.rows @ (
        E @ masked.result.masks[0].reshape(len(view.edges), -1)), received(plain, coalition, 1, 3, net),
        rtol=0, atol=1e-10)
    # a single agent knows only its own two edges: what it receives still carries the others' masks
    M = masked.result.masks[0].reshape(len(view.edges), -1)
    one = coalition_view(net, 3, (0,), basis="messages")
    mine = np.where(one.known_masks[:, None], M, 0.0)
    gap = received(masked, (0,), 1, 3, net) - one.rows @ (E @ mine) - received(plain, (0,), 1, 3, net)
    assert np.abs(gap).max() > 1.0
