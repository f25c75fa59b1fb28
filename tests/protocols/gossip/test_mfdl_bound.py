"""MFDL's absolute-value bound and Muffliato's rounds rule, against independent oracles."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.linear_audit import box_maximum, whiten
from dpgossip.protocols.gossip.bounds import mfdl_abs_sum, muffliato_mixing_rounds
from dpgossip.protocols.gossip.linear import LinearGossip, observe
from dpgossip.topology import Network, make_network
from dpgossip.topology.published import mfdl_erdos_renyi, row_normalised_weights


def _mfdl_projection_sums(W: np.ndarray, T: int, attacker: int) -> np.ndarray:
    """MFDL's computation written out densely: the time-major workload with blocks ``W^(t-s)``, the
    rows of the nodes ``i`` with ``W[attacker, i] > 0`` (the attacker included), plus the attacker's
    own ``g + z`` every round; ``X = pinv(B) B``; per node ``sum |X[idx, idx]|`` over its rounds."""
    n = W.shape[0]
    L = np.zeros((n * T, n * T))
    for lag in range(T):
        P = np.linalg.matrix_power(W, lag)
        for b in range(T - lag):
            L[(b + lag) * n:(b + lag + 1) * n, b * n:(b + 1) * n] = P
    seen = [i for i in range(n) if W[attacker, i] > 0]
    B = L[[t * n + i for t in range(T) for i in seen]]
    own = np.zeros((T, n * T))
    own[np.arange(T), np.arange(T) * n + attacker] = 1.0
    B = np.vstack([B, own])
    X = np.linalg.pinv(B) @ B
    return np.array([np.sum(np.abs(X[np.ix_(np.arange(u, n * T, n), np.arange(u, n * T, n))]))
                     for u in range(n)])


def test_mfdl_bound_equals_their_projection_formula_on_a_row_stochastic_w():
    graph = nx.connected_watts_strogatz_graph(14, 4, 0.3, seed=5)
    W = row_normalised_weights(graph)
    assert not np.allclose(W, W.T)  # row-stochastic, not symmetric
    network = Network(graph=graph, W=W, name="ws", mixing="row-normalised", allow_nonstochastic=True)
    spec = LinearGossip(protocol="gossip-noisy", rounds=5, sigma=1.0, inputs="per-round")
    got = mfdl_abs_sum(network, spec, 3, order=3.0)
    want = 3.0 / 2 * _mfdl_projection_sums(W, 5, 3)
    others = np.arange(14) != 3
    assert np.isnan(got[3])
    assert np.allclose(got[others], want[others], rtol=1e-9, atol=1e-12)


def test_mfdl_bound_is_above_the_box_maximum_and_scales_with_delta():
    network = make_network("grid", agents=12, seed=0)
    spec = LinearGossip(protocol="gossip-noisy", rounds=4, sigma=0.8, inputs="per-round")
    bound = mfdl_abs_sum(network, spec, 0, order=2.0)
    view = observe(network, spec, 0)
    white = whiten(view.J, view.B)
    for u, cols in view.columns_of.items():
        M = white.C[:, cols].T @ white.C[:, cols]
        exact = box_maximum(M).upper
        assert bound[u] >= exact * (1 - 1e-12)
        assert bound[u] == pytest.approx(np.sum(np.abs(M)), rel=1e-12)
    assert np.allclose(mfdl_abs_sum(network, spec, 0, order=2.0, sensitivity=0.5)[1:],
                       0.25 * bound[1:])


def test_mfdl_setting_reproduces_the_published_numbers():
    # MFDL: Erdos-Renyi n = 100, seed 42, T = 10, W = (A + I)/rowsum, attacker 0, noise every round;
    # the figures quoted to us: ~9.86 (their bound), ~9.15 (supremum over [-1, 1]^T), 7.9 (all-equal shift)
    network = mfdl_erdos_renyi(100, 42)
    assert np.allclose(network.W.sum(axis=1), 1.0)
    spec = LinearGossip(protocol="gossip-noisy", rounds=10, sigma=1.0, inputs="per-round")
    bound = mfdl_abs_sum(network, spec, 0, order=2.0)  # alpha = 2: the Renyi value is sum |M|
    view = observe(network, spec, 0)
    white = whiten(view.J, view.B)
    near = network.neighbours[0]
    assert near == (33, 42, 68, 91)
    sup, equal = [], []
    for u in near:
        M = white.C[:, view.columns_of[u]].T @ white.C[:, view.columns_of[u]]
        sup.append(box_maximum(M).upper)
        equal.append(float(np.sum(M)))
    assert np.mean(bound[list(near)]) == pytest.approx(9.845, abs=0.005)
    assert np.mean(sup) == pytest.approx(9.136, abs=0.005)
    assert np.mean(equal) == pytest.approx(7.882, abs=0.005)
    assert all(e < s < b for e, s, b in zip(equal, sup, bound[list(near)], strict=True))


def test_muffliato_rounds_rule_on_the_hypercube():
    # W = (I + A)/(d + 1) on Q_d: lambda_2 = (d - 1)/(d + 1), so T = ceil(ln(2^d) / sqrt(2/(d + 1)))
    for d in (4, 6):
        network = make_network("hypercube", agents=2 ** d)
        want = math.ceil(math.log(2 ** d) / math.sqrt(2 / (d + 1)))
        assert muffliato_mixing_rounds(network, 1.0) == want
    assert math.ceil(math.log(2048) / math.sqrt(2 / 12)) == 19  # d = 11: the T of the 2,048-node example
    # sigma < 1/2 keeps the 1/4 floor: ln(m / (4 sigma^2))
    network = make_network("hypercube", agents=16)
    assert muffliato_mixing_rounds(network, 0.25) == math.ceil(math.log(16 / 0.25) / math.sqrt(0.4))


def test_bad_inputs_name_the_field():
    network = make_network("ring", agents=6)
    with pytest.raises(ConfigError) as exc:
        mfdl_abs_sum(network, LinearGossip(rounds=3), 0)
    assert exc.value.field == "spec"
    with pytest.raises(ConfigError) as exc:
        muffliato_mixing_rounds(network, 0.0)
    assert exc.value.field == "sigma"
    with pytest.raises(ConfigError) as exc:
        mfdl_erdos_renyi(1, 0)
    assert exc.value.field == "agents"
