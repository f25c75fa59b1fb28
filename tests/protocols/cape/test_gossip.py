"""capepca-gossip (docs/cape-gossip.md): zero-sum edge noise, and with many gossip rounds every site's
estimate is capePCA's aggregate with the same total noise."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.cape.gossip import (
    CapeGossipNoise,
    CapeGossipParams,
    cape_gossip_noise,
    run_cape_gossip,
)
from dpgossip.protocols.cape.star import CapeNoise, CapeParams, run_cape
from tests.conftest import net_from_graph, spiked_data


def _setup(graph=None, c=3):
    data = spiked_data(50, 5, [4, 3, 1, 0.5, 0.2], 5, seed=3)
    net = net_from_graph(graph if graph is not None else nx.cycle_graph(5))
    return data, net, CapeGossipParams(k=2, consensus_steps=c, edge_multiplier=3.0, own_multiplier=1.5)


def test_edge_noise_sums_to_zero_and_is_symmetric():
    data, net, params = _setup(nx.barbell_graph(2, 1))              # 5 sites, degrees 1 to 2 and 3
    res = run_cape_gossip(data, net, params, seed=0)
    E = res.noise.edge_sums()
    assert np.max(np.abs(E.sum(axis=0))) <= 1e-12 * np.max(np.abs(E))
    np.testing.assert_array_equal(E, np.swapaxes(E, 1, 2))
    np.testing.assert_array_equal(res.initial, np.swapaxes(res.initial, 1, 2))
    manual = np.zeros_like(E)
    for e, (i, j) in enumerate(res.noise.edges):
        manual[i] += res.noise.D[e]
        manual[j] -= res.noise.D[e]
    np.testing.assert_allclose(E, manual, atol=1e-14)
    tau_e, tau_g = params.stds(10)
    assert np.std(res.noise.D) == pytest.approx(tau_e, rel=0.35)
    assert res.noise.D.shape[0] == net.graph.number_of_edges()


def test_the_sum_of_the_states_is_kept_and_the_estimates_reach_capepca():
    data, net, params = _setup(c=0)
    many = CapeGossipParams(k=2, consensus_steps=600, edge_multiplier=3.0, own_multiplier=1.5)
    res = run_cape_gossip(data, net, many, seed=5, record_states=False)
    few = run_cape_gossip(data, net, CapeGossipParams(k=2, consensus_steps=4, edge_multiplier=3.0,
                                                      own_multiplier=1.5), seed=5, record_states=True)
    for Y in few.states:
        np.testing.assert_allclose(Y.sum(axis=0), few.initial.sum(axis=0), atol=1e-12)
    G = res.noise.G
    cape = run_cape(data, CapeParams(k=2, noise_multiplier=1.0), seed=0,
                    noise=CapeNoise(E=res.noise.edge_sums(), F=np.zeros_like(G), G=G))
    np.testing.assert_allclose(cape.aggregate, res.limit, atol=1e-12)
    for s in range(5):
        np.testing.assert_allclose(res.estimates[s], cape.aggregate, atol=1e-10)
        np.testing.assert_allclose(res.components[s], cape.components, atol=1e-8)


def test_same_seed_same_bits_and_replay():
    data, net, params = _setup()
    a = run_cape_gossip(data, net, params, seed=9)
    b = run_cape_gossip(data, net, params, seed=9, noise=cape_gossip_noise(net, 5, params.stds(10), 9))
    np.testing.assert_array_equal(a.estimates, b.estimates)


def test_asymmetric_noise_is_refused():
    data, net, params = _setup()
    noise = cape_gossip_noise(net, 5, params.stds(10), 0)
    D = noise.D.copy()
    D[0, 0, 1] += 1.0
    with pytest.raises(ConfigError) as err:
        CapeGossipNoise(edges=noise.edges, D=D, G=noise.G)
    assert err.value.field == "noise.D"
    G = noise.G.copy()
    G[1, 2, 0] += 1.0
    with pytest.raises(ConfigError) as err:
        CapeGossipNoise(edges=noise.edges, D=noise.D, G=G)
    assert err.value.field == "noise.G"
    with pytest.raises(ConfigError) as err:
        CapeGossipParams(k=0, consensus_steps=1, edge_multiplier=1.0, own_multiplier=1.0)
    assert err.value.field == "k"


def test_memory_is_checked_before_allocating(monkeypatch):
    data, net, params = _setup()
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "1kB")
    with pytest.raises(ConfigError) as err:
        run_cape_gossip(data, net, params, seed=0, record_states=True)
    assert err.value.field == "data" and "5 sites with d = 5" in str(err.value)
