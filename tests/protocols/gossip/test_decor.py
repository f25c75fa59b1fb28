"""gossip-decor's linear model and secure summation's view against a per-agent run; the edge list,
incidence matrix and the noise convention of both backends (protocol.decor)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.decor import (
    EDGE,
    draw_gossip_noise,
    edge_list,
    incidence,
    pair_stream,
)
from dpgossip.protocols.gossip.linear import (
    GOSSIP_KINDS,
    LinearGossip,
    observe,
    simulate_messages,
    view_values,
)
from dpgossip.rng import run_streams
from dpgossip.topology import make_network

NETWORKS = {
    "path": lambda: make_network("path", agents=6),
    "star": lambda: make_network("star", agents=6),
    "grid": lambda: make_network("grid", agents=16, params={"rows": 4, "cols": 4}),
    "hypercube": lambda: make_network("hypercube", agents=16),
}
SPECS = [
    LinearGossip(protocol="gossip-decor", rounds=4, sigma=0.9, sigma_cor=1.7, inputs="fixed"),
    LinearGossip(protocol="gossip-decor", rounds=4, sigma=0.9, sigma_cor=1.7, inputs="per-round",
                 secure_summation=True),
    LinearGossip(protocol="gossip-average", rounds=4, sigma=0.9, secure_summation=True),
    LinearGossip(protocol="gossip-noisy", rounds=4, sigma=0.9, inputs="once", secure_summation=True),
]


def _per_agent(network, spec, x, z, v):
    """Each agent mixes its neighbours' messages and adds its input, noise and signed edge secrets."""
    m, T = network.m, spec.rounds
    edges = sorted(tuple(sorted(e)) for e in network.graph.edges())
    y = np.zeros((T, m))
    for t in range(T):
        for i in range(m):
            prev = network.W[i, i] * y[t - 1, i] + sum(
                network.W[i, w] * y[t - 1, w] for w in network.neighbours[i]) if t else 0.0
            fresh = t == 0 or spec.protocol != "gossip-average"
            data = x[t if spec.inputs == "per-round" else 0, i] if (
                t == 0 or spec.inputs != "once") and fresh else 0.0
            noise = spec.sigma * z[t, i] if fresh else 0.0
            secret = sum(spec.sigma_cor * v[t, k] * (1 if a == i else -1)
                         for k, (a, b) in enumerate(edges) if i in (a, b)) if spec.secret_rounds else 0
            y[t, i] = prev + data + noise + secret
    return y


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.protocol}-{s.inputs}-ss{s.secure_summation:d}")
@pytest.mark.parametrize("name", list(NETWORKS))
def test_view_equals_the_per_agent_run(name, spec):
    network = NETWORKS[name]()
    m, nE = network.m, network.graph.number_of_edges()
    rng = np.random.default_rng(11)
    x = rng.normal(size=(spec.data_rounds, m))
    z = rng.normal(size=(spec.rounds, m))
    v = rng.normal(size=(spec.secret_rounds, nE))
    states = simulate_messages(network, spec, x, z[:spec.noise_rounds], v if spec.secret_rounds else None)
    assert np.allclose(states, _per_agent(network, spec, x, z, v), atol=1e-12, rtol=0)
    observers = (2, 3)
    # the observers' own data, noise and edge secrets are conditioned out: set them to zero
    x[:, list(observers)] = 0.0
    z[:, list(observers)] = 0.0
    edges = edge_list(network)
    own_edges = np.isin(edges, observers).any(axis=1)
    v[:, own_edges] = 0.0
    states = simulate_messages(network, spec, x, z[:spec.noise_rounds], v if spec.secret_rounds else None)
    view = observe(network, spec, observers)
    xs = x[np.maximum(view.data_index[:, 1], 0), view.data_index[:, 0]]
    zs = z[view.noise_index[:, 1], view.noise_index[:, 0]]
    edge_pos = {tuple(e): k for k, e in enumerate(edges.tolist())}
    vs = np.array([v[t, edge_pos[(a, b)]] for a, b, t in view.secret_index])
    got = view.J @ xs + view.B @ np.concatenate([zs, vs])
    assert np.max(np.abs(got - view_values(network, view, states))) < 1e-12
    assert view.summed == spec.secure_summation
    assert not np.isin(view.secret_index[:, :2], observers).any()


def test_edges_incidence_and_laplacian():
    network = make_network("grid", agents=9, params={"rows": 3, "cols": 3})
    edges = edge_list(network)
    assert edges.shape == (12, 2) and np.all(edges[:, 0] < edges[:, 1])
    E = incidence(network).toarray()
    L = nx.laplacian_matrix(network.graph, nodelist=range(9)).toarray()
    assert np.array_equal(E @ E.T, L)


def test_noise_convention_is_the_agents_and_the_edges_streams():
    network = make_network("ring", agents=5)
    noise = draw_gossip_noise(network, 42, noise_rounds=3, secret_rounds=3, dim=2)
    streams = run_streams(42, 5)
    for i in range(5):
        assert np.array_equal(noise.z[:, i], streams.agents[i].standard_normal((3, 2)))
    for k, (i, j) in enumerate(edge_list(network)):
        assert np.array_equal(noise.secrets[:, k], pair_stream(42, EDGE, i, j).standard_normal((3, 2)))
    # independent of the agents' streams, and of other pairs
    assert not np.allclose(noise.secrets[:, 0], noise.secrets[:, 1])
    plain = draw_gossip_noise(network, 42, noise_rounds=1, secret_rounds=0)
    assert plain.secrets.shape == (0, 5, 1) and plain.z.shape == (1, 5, 1)
    assert plain.z[0, 3, 0] == noise.z[0, 3, 0]


def test_kinds_and_bad_parameters():
    assert GOSSIP_KINDS == ("gossip-average", "gossip-noisy", "gossip-decor")
    assert LinearGossip(protocol="gossip-decor", rounds=2).inputs == "fixed"
    for kwargs, field in (({"sigma_cor": 1.0}, "sigma_cor"),
                          ({"protocol": "gossip-decor", "sigma_cor": -1.0}, "sigma_cor"),
                          ({"secure_summation": "yes"}, "secure_summation")):
        with pytest.raises(ConfigError) as caught:
            LinearGossip(rounds=2, **kwargs)
        assert caught.value.field == field and str(caught.value).startswith(field)
    row = LinearGossip(protocol="gossip-decor", rounds=2, sigma_cor=0.5).to_row()
    assert row["sigma_cor"] == 0.5 and row["secure_summation"] is False


def test_view_values_needs_message_rows():
    network = make_network("path", agents=4)
    view = observe(network, LinearGossip(rounds=2), 0, basis="krylov")
    with pytest.raises(ConfigError) as caught:
        view_values(network, view, np.zeros((2, 4)))
    assert caught.value.field == "view"
