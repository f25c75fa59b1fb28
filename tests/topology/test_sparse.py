"""Sparse paths against the dense computations at small sizes (to 1e-10 or better)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import dpgossip.topology.validate as validate_mod
from dpgossip.errors import ConfigError
from dpgossip.topology import Network, build_graph, make_network, validate_mixing
from dpgossip.topology import spectral as spectral_mod
from dpgossip.topology.mixing import _degrees_edges, _from_edge_weights, _sparse_from_edge_weights
from dpgossip.topology.spectral import _dense_summary, _lanczos_summary

GRAPHS = {
    "ring60": nx.cycle_graph(60),
    "grid7x8": nx.convert_node_labels_to_integers(nx.grid_2d_graph(7, 8)),
    "er80": build_graph("erdos_renyi", 80, seed=3),
    "rgg90": build_graph("random_geometric", 90, seed=4),
}


def metropolis_edges(g: nx.Graph) -> tuple[np.ndarray, np.ndarray]:
    d, e = _degrees_edges(g)
    return e, 1.0 / (1.0 + np.maximum(d[e[:, 0]], d[e[:, 1]]))


@pytest.mark.parametrize("name", list(GRAPHS))
def test_sparse_builder_equals_dense_builder(name):
    g = GRAPHS[name]
    e, w = metropolis_edges(g)
    dense = _from_edge_weights(g.number_of_nodes(), e, w).toarray()
    sparse = _sparse_from_edge_weights(g.number_of_nodes(), e, w)
    assert isinstance(sparse, sp.csr_array)
    np.testing.assert_allclose(sparse.toarray(), dense, rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", list(GRAPHS))
def test_lanczos_summary_equals_eigvalsh(name):
    g = GRAPHS[name]
    W = _sparse_from_edge_weights(g.number_of_nodes(), *metropolis_edges(g))
    dense, lanczos = _dense_summary(W.toarray(), 1e-6), _lanczos_summary(W, 1e-6)
    assert lanczos.method == "lanczos" and lanczos.error_bound < 1e-10
    for f in ("lambda_2", "lambda_min", "slem"):
        assert getattr(lanczos, f) == pytest.approx(getattr(dense, f), abs=1e-10)


def test_shift_invert_fallback_equals_eigvalsh(monkeypatch):
    # a long ring: eigenvalues cluster at both ends, plain Lanczos (no restarts) cannot converge
    monkeypatch.setattr(spectral_mod, "PLAIN_MAXITER", 1)
    g = nx.cycle_graph(400)
    W = _sparse_from_edge_weights(400, *metropolis_edges(g))
    dense, lanczos = _dense_summary(W.toarray(), 1e-6), _lanczos_summary(W, 1e-6)
    for f in ("lambda_2", "lambda_min", "slem"):
        assert getattr(lanczos, f) == pytest.approx(getattr(dense, f), abs=1e-10)


RING = nx.cycle_graph(6)
GOOD = (np.eye(6) + nx.to_numpy_array(RING)) / 3


def bad_matrices() -> dict[str, tuple[nx.Graph, np.ndarray, str]]:
    asym = GOOD.copy()
    asym[0, 1] += 1e-6
    neg = GOOD.copy()
    neg[0, 1] = neg[1, 0] = -0.1
    neg[0, 0] = neg[1, 1] = 1 - 1 / 3 + 0.1
    sums = GOOD * 1.01
    off = GOOD.copy()
    off[0, 3] = off[3, 0] = 0.1
    off[0, 0] = off[3, 3] = 1 / 3 - 0.1
    split = np.kron(np.eye(2), np.full((3, 3), 1 / 3))      # support: two triangles
    periodic = nx.to_numpy_array(RING) / 2                  # even ring, zero diagonal
    nan = GOOD.copy()
    nan[2, 3] = np.nan
    return {"symmetric": (RING, asym, "not symmetric"), "negative": (RING, neg, "negative"),
            "stochastic": (RING, sums, "doubly stochastic"), "edges": (RING, off, "not an edge"),
            "connected": (nx.complete_graph(6), split, "eigenvalue 1 more than once"),
            "periodic": (RING, periodic, "eigenvalue -1"), "finite": (RING, nan, "not finite")}


@pytest.mark.parametrize("kind", list(bad_matrices()))
@pytest.mark.parametrize("large", [False, True])
def test_validation_verdicts_are_the_same_sparse_and_dense(kind, large, monkeypatch):
    """Each failure kind is caught, with the same message head, by the dense spectral check and by the
    O(|E|) combinatorial one (forced by setting the dense limit to 0)."""
    if large:
        monkeypatch.setattr(validate_mod, "DENSE_MAX_AGENTS", 0)
    graph, W, words = bad_matrices()[kind]
    for given in (W, sp.csr_array(np.nan_to_num(W, nan=np.nan))):
        with pytest.raises(ConfigError, match=words):
            validate_mixing(graph, given)
    validate_mixing(RING, GOOD)
    validate_mixing(RING, sp.csr_array(GOOD))


def test_dense_w_is_refused_above_the_limit(monkeypatch):
    net = make_network("ring", agents=50)
    np.testing.assert_array_equal(net.dense_W(), net.W.toarray())
    assert net.dense_W() is net.dense_W() and not net.dense_W().flags.writeable
    fresh = make_network("ring", agents=50)
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "10KB")                # 50 x 50 floats: 19.5 KiB
    with pytest.raises(ConfigError, match=r"agents = 50 needs a dense 50 x 50 mixing matrix"):
        fresh.dense_W()


def test_network_weights_accessors():
    net = make_network("paper-ring4")
    for i in range(4):
        assert net.self_weight(i) == net.dense_W()[i, i]
        np.testing.assert_array_equal(net.neighbour_weights(i),
                                      net.dense_W()[i, list(net.neighbours[i])])


def test_network_file_is_written_as_edges(tmp_path):
    from dpgossip.topology import load_graph, save_graph_json

    net = make_network("random_geometric", agents=30, seed=1)
    path = save_graph_json(net.graph, net.W, tmp_path / "n.json")
    text = path.read_text()
    assert '"W"' not in text and '"self_weight"' in text
    np.testing.assert_array_equal(load_graph(path).W.toarray(), net.W.toarray())


def test_network_accepts_dense_and_sparse():
    a = Network(graph=RING, W=GOOD)
    b = Network(graph=RING, W=sp.csr_matrix(GOOD))
    assert (a.W != b.W).nnz == 0 and a.W.nnz == 18


def test_parameters_and_runs_are_the_same_with_lanczos_and_a_sparse_w(monkeypatch):
    """Corollary 1's mu (Lanczos on the Xi operator vs dense eigvalsh of Xi) and run_matrix (sparse W
    vs the dense W it used before) agree to 1e-10."""
    import dpgossip.protocols.ddppm.spectrum as spectrum_mod
    from dpgossip.data.partition import PartitionedData
    from dpgossip.protocols.ddppm.matrix import run_matrix
    from dpgossip.protocols.ddppm.params import resolve_params
    from dpgossip.protocols.gossip.average import mixing_operator

    net = make_network("random_geometric", agents=70, seed=2)
    X = np.random.default_rng(1).standard_normal((350, 6)) * np.array([3, 2, 1.5, 1, 0.5, 0.2])
    data = PartitionedData(X=X / np.linalg.norm(X, axis=1).max(), sizes=(5,) * 70)
    dense = resolve_params(data, net, iterations=4, consensus_steps=3, rank=2)
    monkeypatch.setattr(spectrum_mod, "_DENSE_LIMIT", 0)
    lanczos = resolve_params(data, net, iterations=4, consensus_steps=3, rank=2)
    np.testing.assert_allclose(lanczos.mu, dense.mu, rtol=1e-10)
    np.testing.assert_allclose(lanczos.alpha, dense.alpha, rtol=1e-10)
    np.testing.assert_allclose(lanczos.sigma_p, dense.sigma_p, rtol=1e-10)
    assert mixing_operator(net.W) is net.W            # the sparse W is used as it is, no m^2 scan
    a = run_matrix(data, net, dense, seed=5)
    b = run_matrix(data, Network(graph=net.graph, W=net.dense_W(), name="d"), dense, seed=5)
    np.testing.assert_allclose(a.iterates, b.iterates, rtol=0, atol=1e-10)
