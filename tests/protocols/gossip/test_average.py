import networkx as nx
import numpy as np
import pytest

from dpgossip.protocols.gossip.average import gossip, gossip_states, mixing_operator
from tests.conftest import metropolis


@pytest.mark.parametrize(
    "graph",
    [
        nx.cycle_graph(9),
        nx.grid_2d_graph(3, 4),
        nx.connected_watts_strogatz_graph(30, 4, 0.2, seed=3),
    ],
)
@pytest.mark.parametrize("c", [1, 3, 10])
def test_consensus_within_slem_bound(graph, c):
    graph = nx.convert_node_labels_to_integers(graph)
    W = metropolis(graph)
    m = W.shape[0]
    ev = np.sort(np.abs(np.linalg.eigvalsh(W)))
    slem = ev[-2]
    Z = np.random.default_rng(c).standard_normal((m, 5))
    mean = Z.mean(axis=0)
    out = gossip(mixing_operator(W), Z, c)
    # Appendix A1 of Campbell et al.: ||W^c z - z_bar|| <= SLEM^c ||z - z_bar||
    assert np.linalg.norm(out - mean) <= slem**c * np.linalg.norm(Z - mean) * (1 + 1e-12)
    # the average is preserved exactly (doubly stochastic)
    np.testing.assert_allclose(out.mean(axis=0), mean, atol=1e-13)


def test_states_are_successive_rounds():
    W = metropolis(nx.path_graph(5))
    Z = np.arange(10.0).reshape(5, 2)
    S = gossip_states(W, Z, 4)
    assert S.shape == (5, 5, 2)
    for k in range(5):
        np.testing.assert_allclose(S[k], np.linalg.matrix_power(W, k) @ Z, atol=1e-12)


def test_sparse_operator_matches_dense():
    g = nx.random_regular_graph(4, 100, seed=1)
    W = metropolis(g)
    Z = np.random.default_rng(0).standard_normal((100, 3))
    op = mixing_operator(W)
    assert not isinstance(op, np.ndarray)
    np.testing.assert_allclose(gossip(op, Z, 7), np.linalg.matrix_power(W, 7) @ Z, atol=1e-12)
