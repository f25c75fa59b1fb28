"""Exact leakage of gossip-decor and of secure summation against a dense projection oracle, and
DECOR's one-round closed form reproduced by the multi-round model."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_audit import LinearAuditSettings, whiten
from dpgossip.protocols.gossip.audit import audit_gossip, audit_view
from dpgossip.protocols.gossip.bounds import decor_round_rdp, decor_round_view
from dpgossip.protocols.gossip.linear import LinearGossip, eavesdrop, observe
from dpgossip.topology import make_network

NETWORKS = {
    "path": lambda: make_network("path", agents=6),
    "star": lambda: make_network("star", agents=6),
    "grid": lambda: make_network("grid", agents=16, params={"rows": 4, "cols": 4}),
    "hypercube": lambda: make_network("hypercube", agents=16),
}
SPECS = [
    LinearGossip(protocol="gossip-decor", rounds=3, sigma=0.7, sigma_cor=1.5, inputs="once"),
    LinearGossip(protocol="gossip-decor", rounds=3, sigma=0.7, sigma_cor=1.5, inputs="fixed"),
    LinearGossip(protocol="gossip-decor", rounds=3, sigma=0.7, sigma_cor=1.5, inputs="per-round"),
    LinearGossip(protocol="gossip-average", rounds=4, sigma=0.8, secure_summation=True),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.1, inputs="once", secure_summation=True),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.1, inputs="fixed", secure_summation=True),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.1, inputs="per-round",
                 secure_summation=True),
    LinearGossip(protocol="gossip-decor", rounds=3, sigma=0.7, sigma_cor=1.5, inputs="fixed",
                 secure_summation=True),
]


def _latent(network, spec):
    """Dense maps of every state ``y^t`` on all latent standard normals ``[agent noise | edge
    secrets]`` (both round-major), from the recursion with dense ``W`` and networkx's edges."""
    m, T = network.m, spec.rounds
    W = network.dense_W()
    edges = sorted(tuple(sorted(e)) for e in network.graph.edges())
    E = np.zeros((m, len(edges)))
    for k, (a, b) in enumerate(edges):
        E[a, k], E[b, k] = 1.0, -1.0
    R, nE = spec.noise_rounds, len(edges)
    n_cols = R * m + (T * nE if spec.protocol == "gossip-decor" else 0)
    Y, states = np.zeros((m, n_cols)), []
    for t in range(T):
        Y = W @ Y
        if t < R:
            Y[:, t * m:(t + 1) * m] += spec.sigma * np.eye(m)
        if spec.protocol == "gossip-decor":
            Y[:, R * m + t * nE:R * m + (t + 1) * nE] += spec.sigma_cor * E
        states.append(Y.copy())
    return states, edges


def _projection(network, spec, observers):
    """``P``, the projection onto the row space of everything the observers hold: received
    messages (or full secure sums ``sum_{w in N(v)} W_vw y_w^t``), their own states, and their own
    noise and edge secrets as unit rows."""
    m, T = network.m, spec.rounds
    states, edges = _latent(network, spec)
    W = network.dense_W()
    rows = []
    for Y in states:
        rows += [Y[v] for v in observers]
        for v in observers:
            nbrs = list(network.graph.neighbors(v))
            if spec.secure_summation:
                rows.append(sum(W[v, w] * Y[w] for w in nbrs))
            else:
                rows += [Y[w] for w in nbrs]
    n_cols = states[0].shape[1]
    own = [r * m + v for r in range(spec.noise_rounds) for v in observers]
    if spec.protocol == "gossip-decor":
        R = spec.noise_rounds * m
        own += [R + t * len(edges) + k for t in range(T) for k, e in enumerate(edges)
                if set(e) & set(observers)]
    A = np.vstack(rows + [np.eye(n_cols)[own]])
    return np.linalg.pinv(A, rcond=1e-12) @ A


def _oracle(P, spec, m, target, bound):
    """``max_s ||P c(s)||^2``, ``c(s)`` the target's input shift written as a shift of its own noise
    draws (the input enters each round exactly where its noise does)."""
    T, n_cols = spec.rounds, P.shape[0]
    if spec.inputs == "once" or spec.protocol == "gossip-average":
        shifts = [[0]]
    elif spec.inputs == "fixed":
        shifts = [list(range(T))]
    else:
        shifts = [[t] for t in range(T)]
    cols = [np.sum([np.eye(n_cols)[r * m + target] for r in rs], axis=0) / spec.sigma
            for rs in shifts]
    return max(float(np.sum((P @ sum(s * c for s, c in zip(signs, cols, strict=True))) ** 2))
               for signs in itertools.product([-bound, bound], repeat=len(cols)))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.protocol}-{s.inputs}-ss{s.secure_summation:d}")
@pytest.mark.parametrize("name", list(NETWORKS))
@pytest.mark.parametrize("coalition", [False, True])
def test_exact_mu_equals_the_projection_oracle(name, spec, coalition):
    network = NETWORKS[name]()
    observers = (0, network.m - 1) if coalition else (1,)
    rows = audit_gossip(network, spec, observers, LinearAuditSettings(sensitivity=0.5))
    assert [r.target for r in rows] == [u for u in range(network.m) if u not in observers]
    P = _projection(network, spec, observers)
    for row in rows:
        mu2 = _oracle(P, spec, network.m, row.target, 0.5)
        assert row.exact and abs(row.mu ** 2 - mu2) < 1e-9, (row, mu2)


def test_secure_summation_hides_what_the_sum_hides():
    # a star's centre receives only the weighted sum of its leaves: with gossip-average and one
    # round it sees sum_w W_0w (x_w + eta_w), so every leaf has mu^2 = 1 / (sigma^2 (m - 1))
    network = make_network("star", agents=6)
    spec = LinearGossip(rounds=1, sigma=1.0, secure_summation=True)
    rows = audit_gossip(network, spec, 0)
    assert all(r.mu ** 2 == pytest.approx(1 / 5, abs=1e-12) for r in rows)
    plain = audit_gossip(network, LinearGossip(rounds=1, sigma=1.0), 0)
    assert all(r.mu ** 2 == pytest.approx(1.0, abs=1e-12) for r in plain)
    # a leaf has one neighbour: its sum is the centre's message, nothing is hidden
    for ss in (False, True):
        leaf = audit_gossip(network, LinearGossip(rounds=3, sigma=1.0, secure_summation=ss), 1)
        assert leaf[0].target == 0 and leaf[0].mu == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("name, m", [("ring", 8), ("grid", 16), ("erdos_renyi", 30)])
def test_one_round_of_the_decor_model_is_decor_round_view(name, m):
    # DECOR's threat model: an eavesdropper on every edge; with one round the multi-round model's
    # view is decor_round_view's J = I, B = [sigma_cdp I, sigma_cor E] column for column, and the
    # exact auditor reproduces the closed form alpha 2 C^2 max_i (Sigma^-1)_ii to 1e-10
    network = make_network(name, agents=m, seed=5)
    spec = LinearGossip(protocol="gossip-decor", rounds=1, sigma=0.6, sigma_cor=2.0)
    view = eavesdrop(network, spec)
    ref = decor_round_view(network, sigma_cdp=0.6, sigma_cor=2.0)
    assert np.array_equal(view.J, ref.J) and np.array_equal(view.B, ref.B)
    rows = audit_view(view, network, LinearAuditSettings(sensitivity=3.0, orders=(3.0,)))
    closed = decor_round_rdp(network, sigma_cdp=0.6, sigma_cor=2.0, clip=1.5, order=3.0)
    assert max(r.rdp[0] for r in rows) == pytest.approx(closed, rel=1e-10)
    per_target = 3.0 * 2 * 1.5 ** 2 * np.diag(np.linalg.inv(ref.covariance))
    assert np.allclose([r.rdp[0] for r in rows], per_target, rtol=1e-10)
    assert rows[0].observer == "eavesdropper" and rows[0].hops == 0


def test_curious_users_see_the_honest_laplacian():
    # eavesdropper plus curious users S (they know their edges' secrets): the honest releases have
    # covariance sigma_cdp^2 I + sigma_cor^2 L_H, L_H the Laplacian of the graph on the honest agents
    network = make_network("grid", agents=16, params={"rows": 4, "cols": 4})
    spec = LinearGossip(protocol="gossip-decor", rounds=1, sigma=0.5, sigma_cor=1.2)
    curious = (5, 10)
    rows = audit_view(eavesdrop(network, spec, knows=curious), network)
    honest = [u for u in range(16) if u not in curious]
    L = nx.laplacian_matrix(network.graph.subgraph(honest), nodelist=honest).toarray()
    inv = np.linalg.inv(0.25 * np.eye(len(honest)) + 1.44 * L)
    assert [r.target for r in rows] == honest and rows[0].observer == "eavesdropper+5+10"
    assert np.allclose([r.mu ** 2 for r in rows], np.diag(inv), rtol=1e-10)


def test_more_rounds_and_fewer_edges_and_bad_input():
    network = make_network("path", agents=5)
    spec = LinearGossip(protocol="gossip-decor", rounds=3, sigma=1.0, sigma_cor=1.0)
    one_edge = audit_view(eavesdrop(network, spec, [(3, 2)]), network)
    assert {r.target: r.hops for r in one_edge} == {0: 2, 1: 1, 2: 0, 3: 0, 4: 1}
    everything = audit_view(eavesdrop(network, spec), network)
    assert all(a.mu <= b.mu + 1e-12 for a, b in zip(one_edge, everything, strict=True))
    for kwargs, field in (({"edges": [(0, 2)]}, "edges"), ({"edges": []}, "edges"),
                          ({"knows": [7]}, "observers")):
        with pytest.raises(ConfigError) as caught:
            eavesdrop(network, spec, **kwargs)
        assert caught.value.field == field
    with pytest.raises(ConfigError) as caught:
        eavesdrop(network, LinearGossip(rounds=2, secure_summation=True))
    assert caught.value.field == "secure_summation"
    assert math.isfinite(everything[0].epsilon)


@pytest.mark.parametrize("spec", [SPECS[1], SPECS[7]], ids=["decor", "decor-ss"])
def test_vector_data_with_iid_noise_reduces_to_the_scalar_case(spec):
    # d coordinates with i.i.d. noise (edge secrets and masks per coordinate too): the view is
    # J kron I_d, B kron I_d, so a shift delta of the target's vector has mu = ||delta|| mu_scalar
    network = NETWORKS["grid"]()
    view = observe(network, spec, (5, 6))
    d = 3
    scalar = whiten(view.J, view.B)
    vector = whiten(np.kron(view.J, np.eye(d)), np.kron(view.B, np.eye(d)))
    shift = np.array([0.6, -0.8, 0.0]) * 0.5  # norm 0.5
    for u, cols in view.columns_of.items():
        cu = scalar.C[:, cols[0]]
        got = float(np.sum((vector.C[:, [cols[0] * d + k for k in range(d)]] @ shift) ** 2))
        assert got == pytest.approx(0.25 * float(cu @ cu), rel=1e-10, abs=1e-14), u
