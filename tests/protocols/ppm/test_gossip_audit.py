"""Audits of ppm-gossip's views (protocols.ppm.gossip_audit) against closed forms, a dense brute force and
the accountant (docs/ppm.md, ppm-gossip)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.accountant import composition_guarantee
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocols.ppm.central import PpmParams
from dpgossip.protocols.ppm.gossip import PpmGossipParams, edge_list, run_ppm_gossip
from dpgossip.protocols.ppm.gossip_audit import (
    audit_ppm_gossip,
    coalition_view,
    eavesdropper_view,
    mask_free_gains,
    sum_view,
    view_gains,
)
from dpgossip.protocols.ppm.guarantee import ppm_guarantee
from tests.protocols.ppm.ppm_gossip_helpers import (
    dense_W,
    metropolis_network,
    partitioned,
    random_graph,
)

SIGMA, L, DELTA = 2.0, 3, 1e-5
PPM = PpmParams(p=3, k=2, iterations=L, noise_multiplier=SIGMA)  # row replacement: Delta = sqrt(2)


def _run(network, c, mask_std, seed=1, ppm=PPM):
    data = partitioned(network.m)
    return run_ppm_gossip(data, network, PpmGossipParams(ppm=ppm, consensus_steps=c, mask_std=mask_std),
                          seed)


def _mu(run, view):
    return {t.target: t.mu for t in audit_ppm_gossip(run, view).leakages}


# --- (d) brute force: the full d x p view, built literally with numpy ------------------------------

def _brute_force_fisher(W, edges, senders, rounds, known_agents, noise_std, tau, q, target):
    """``J_u^T Sigma^+ J_u`` (``q x q``) of the literal messages ``(e_w^T W^k S^0)_coord``, every input,
    noise and mask coordinate a separate latent column."""
    s, E = W.shape[0], len(edges)
    inc = np.zeros((s, E))
    for e, (i, j) in enumerate(edges):
        inc[i, e], inc[j, e] = 1.0, -1.0
    rows = np.array([np.linalg.matrix_power(W, k)[w] for k in range(rounds) for w in senders])
    eye = np.eye(q)
    J = np.kron(rows, eye)  # latent input (agent, coord)
    N = np.kron(rows * noise_std, eye)
    M = tau * np.kron(rows @ inc, eye)
    unknown = [i for i in range(s) if i not in known_agents]
    keep = lambda agents: [a * q + c for a in agents for c in range(q)]  # noqa: E731
    unknown_edges = [e for e, (i, j) in enumerate(edges) if i not in known_agents and j not in known_agents]
    B = np.hstack([N[:, keep(unknown)], M[:, keep(unknown_edges)]])
    Sigma_pinv = np.linalg.pinv(B @ B.T, rcond=1e-12, hermitian=True)
    Ju = J[:, keep([target])]
    return Ju.T @ Sigma_pinv @ Ju


@pytest.mark.parametrize("observers, tau", [((0,), 0.7), ((0,), 0.0), ((1, 3), 1.3), ((3,), 2.0)])
def test_gains_match_a_dense_brute_force_of_the_whole_block(observers, tau):
    G = nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3), (3, 4)])
    network = metropolis_network(G)
    noise_std = np.array([0.5, 0.8, 0.3, 1.1, 0.6])
    view = coalition_view(network, 3, observers)
    g = view_gains(view, noise_std, tau)
    senders = sorted({w for v in observers for w in network.neighbours[v]} - set(observers))
    for u in range(5):
        if u in observers:
            assert np.isnan(g[u])
            continue
        F = _brute_force_fisher(dense_W(network), edge_list(network).tolist(), senders, 3, observers,
                                noise_std, tau, 4, u)
        np.testing.assert_allclose(F, g[u] * np.eye(4), rtol=1e-8, atol=1e-10)


def test_the_view_rows_are_the_literal_messages_of_a_run():
    network = metropolis_network(random_graph(7, seed=4))
    run = _run(network, 3, 1.0)
    view = coalition_view(network, 3, 2, basis="messages")
    senders = sorted(set(network.neighbours[2]))
    for l in range(L):
        S0 = run.states[l, 0].reshape(7, -1)
        got = (view.rows @ S0).reshape(3, len(senders), -1)
        np.testing.assert_allclose(got, run.states[l, :3][:, senders].reshape(3, len(senders), -1),
                                   atol=1e-12)
    # the Krylov basis carries the same information: same gains
    krylov = coalition_view(network, 3, 2)
    np.testing.assert_allclose(view_gains(view, run.noise_std[0], 1.0),
                               view_gains(krylov, run.noise_std[0], 1.0), rtol=1e-9)


# --- (a) a coalition that knows every mask sees what an unmasked run shows -------------------------

@pytest.mark.parametrize("c", [1, 3, 12])
def test_a_coalition_holding_every_mask_sees_exactly_the_unmasked_view(c):
    network = metropolis_network(nx.cycle_graph(8))
    evens = (0, 2, 4, 6)  # every edge of the even ring has an even end: every mask is known
    view = coalition_view(network, c, evens)
    assert view.known_masks.all()
    masked, plain = _mu(_run(network, c, 25.0), view), _mu(_run(network, c, 0.0), view)
    assert set(masked) == {1, 3, 5, 7}
    for u in masked:
        assert masked[u] == pytest.approx(plain[u], abs=1e-10)
    # a single agent knows the masks of its own edges only: there the masks do hide something
    one = coalition_view(network, c, 0)
    assert one.known_masks.sum() == 2
    assert _mu(_run(network, c, 25.0), one)[1] < _mu(_run(network, c, 0.0), one)[1]


def test_a_leaf_is_not_protected_from_its_only_neighbour_by_masks():
    network = metropolis_network(nx.path_graph(5))
    s, nu2 = 5, SIGMA**2 / 5
    for tau in (0.0, 1.0, 100.0):
        mu = _mu(_run(network, 1, tau), coalition_view(network, 1, 1))[0]
        # S_0 = x_0 + nu Delta z_0 + M_01, and agent 1 knows M_01: mu^2 = L Delta^2 / (nu Delta)^2
        assert mu**2 == pytest.approx(L / nu2, rel=1e-10)
        assert mu**2 == pytest.approx(L * s / SIGMA**2, rel=1e-10)


# --- (b) masks: monotone decrease to the leakage of the mask-free combinations ---------------------

def test_one_round_on_a_ring_matches_its_closed_form_at_every_mask_scale():
    network = metropolis_network(nx.cycle_graph(16))
    n2 = 2.0 * SIGMA**2 / 16  # (Delta nu)^2
    for tau in (0.0, 0.5, 2.0, 30.0):
        mu = _mu(_run(network, 1, tau), coalition_view(network, 1, 5))
        # S_4 = x_4 + noise + M_34 (unknown) - M_45 (known to 5): mu^2 = L Delta^2 / (n^2 + tau^2)
        assert mu[4] ** 2 == pytest.approx(L * 2.0 / (n2 + tau**2), rel=1e-10)
        assert mu[8] == 0.0  # not a sender to 5, and c = 1
    assert mask_free_gains(coalition_view(network, 1, 5), np.full(16, math.sqrt(n2)))[4] == 0.0


@pytest.mark.parametrize("graph", ["ring", "random"])
def test_a_neighbours_leakage_decreases_with_the_masks_to_the_sum_without_its_share(graph):
    G = nx.cycle_graph(16) if graph == "ring" else random_graph(16, seed=5)
    network, s, c = metropolis_network(G), 16, 30
    v = 0
    u = network.neighbours[v][0]
    mus = [_mu(_run(network, c, tau), coalition_view(network, c, v))[u]
           for tau in (0.0, 0.3, 1.0, 3.0, 10.0, 100.0, 1e4)]
    assert all(a > b for a, b in zip(mus, mus[1:], strict=False)), mus
    assert mus[0] ** 2 == pytest.approx(L * s / SIGMA**2, rel=1e-9)  # no masks: x_u + its share
    # tau -> inf: only 1^T S^(0) minus the agent's own share is mask-free, G - v being connected
    limit = L * 2.0 * mask_free_gains(coalition_view(network, c, v),
                                      np.full(s, math.sqrt(2.0) * SIGMA / 4))[u]
    assert limit == pytest.approx(L * s / ((s - 1) * SIGMA**2), rel=1e-9)
    assert mus[-1] ** 2 == pytest.approx(limit, rel=1e-6)
    assert mus[-1] ** 2 > limit


# --- (c) audit against the accountant ------------------------------------------------------------

@pytest.mark.parametrize("graph", ["ring", "random"])
@pytest.mark.parametrize("c, tau", [(1, 0.0), (5, 3.0), (60, 100.0)])
def test_the_sum_view_is_the_central_gaussian_mechanism(graph, c, tau):
    G = nx.cycle_graph(16) if graph == "ring" else random_graph(16, seed=5)
    run = _run(metropolis_network(G), c, tau)
    audit = audit_ppm_gossip(run, sum_view(metropolis_network(G)), delta=DELTA)
    g = ppm_guarantee(PPM, DELTA)
    for t in audit.leakages:
        assert t.mu == pytest.approx(math.sqrt(L) / SIGMA, rel=1e-12)
        assert t.epsilon == pytest.approx(g.epsilon_gdp, abs=1e-6)
        assert t.epsilon <= g.epsilon_pld + 1e-9 <= g.epsilon_rdp + 1e-9 <= g.epsilon_zcdp + 1e-9


@pytest.mark.parametrize("graph, c", [("ring", 1), ("ring", 4), ("random", 1), ("random", 2)])
def test_single_agent_views_stay_below_the_guarantee_while_they_cannot_see_the_sum(graph, c):
    G = nx.cycle_graph(16) if graph == "ring" else random_graph(16, seed=5)
    network = metropolis_network(G)
    run = _run(network, c, 10.0)
    eps = ppm_guarantee(PPM, DELTA).epsilon_gdp
    for v in range(16):
        worst = audit_ppm_gossip(run, coalition_view(network, c, v), delta=DELTA).worst
        assert worst.epsilon <= eps, (v, worst)


@pytest.mark.parametrize("graph", ["ring", "random"])
def test_single_agent_views_exceed_the_servers_guarantee_once_they_see_the_sum(graph):
    """The check that can fail, failing: Nicolas et al.'s guarantee is against the server. An agent
    that sees the sum knows its own share, so the noise left is (s - 1)/s of the central one; finite
    masks add more."""
    G = nx.cycle_graph(16) if graph == "ring" else random_graph(16, seed=5)
    network, s, c = metropolis_network(G), 16, 40
    run = _run(network, c, 1e3)
    central = ppm_guarantee(PPM, DELTA).epsilon_gdp
    client = composition_guarantee([SIGMA * math.sqrt((s - 1) / s)] * L, DELTA, pld=False).epsilon_gdp
    for v in (0, 7):
        worst = audit_ppm_gossip(run, coalition_view(network, c, v), delta=DELTA).worst
        assert worst.epsilon > client > central
        assert worst.epsilon == pytest.approx(client, rel=1e-3)
    assert gaussian_mechanism_epsilon(math.sqrt(L * s / ((s - 1) * SIGMA**2)), DELTA) == pytest.approx(
        client, abs=1e-6)


def test_an_eavesdropper_on_every_edge_sees_the_central_mechanism_as_the_masks_grow():
    network = metropolis_network(random_graph(10, seed=6))
    view = eavesdropper_view(network, 1, [tuple(e) for e in edge_list(network)])
    mus = [audit_ppm_gossip(_run(network, 1, tau), view).worst.mu for tau in (0.0, 10.0, 1e4)]
    assert mus[0] ** 2 == pytest.approx(L * 10 / SIGMA**2, rel=1e-9)  # each x_u with its share only
    assert mus[0] > mus[1] > mus[2]
    assert mus[2] ** 2 == pytest.approx(L / SIGMA**2, rel=1e-6)
    mask_free = mask_free_gains(view, np.full(10, math.sqrt(2.0) * SIGMA / math.sqrt(10)))
    np.testing.assert_allclose(L * 2.0 * mask_free, L / SIGMA**2, rtol=1e-9)


def test_element_adjacency_uses_each_agents_own_iterate_and_noise():
    network = metropolis_network(nx.cycle_graph(6))
    ppm = PpmParams(p=2, k=1, iterations=2, noise_multiplier=1.5, adjacency="element")
    run = _run(network, 2, 0.5, ppm=ppm)
    audit = audit_ppm_gossip(run, coalition_view(network, 2, 0))
    for l in range(2):
        g = view_gains(coalition_view(network, 2, 0), run.noise_std[l], 0.5)
        D = np.max(np.linalg.norm(run.iterates[l], axis=2), axis=1)
        np.testing.assert_allclose(audit.mu2_per_iteration[l, 1:], (D**2 * g)[1:], rtol=1e-12)
    assert np.isnan(audit.mu2_per_iteration[:, 0]).all()
    row = audit.to_row()
    assert row["view"] == "coalition" and row["label"] == "0" and row["adjacency"] == "element"


def test_bad_views_and_arguments_name_their_field():
    network = metropolis_network(nx.cycle_graph(6))
    run = _run(network, 2, 0.0)
    with pytest.raises(ConfigError) as caught:
        eavesdropper_view(network, 2, [(0, 3)])
    assert caught.value.field == "watched"
    with pytest.raises(ConfigError) as caught:
        audit_ppm_gossip(run, sum_view(metropolis_network(nx.cycle_graph(5))))
    assert caught.value.field == "view"
    with pytest.raises(ConfigError) as caught:
        audit_ppm_gossip(run, sum_view(network), delta=1.5)
    assert caught.value.field == "delta"
    with pytest.raises(ConfigError) as caught:
        coalition_view(network, 2, 9)
    assert caught.value.field == "observers"
    with pytest.raises(ConfigError) as caught:
        coalition_view(network, 2, 1, basis="dense")
    assert caught.value.field == "basis"
