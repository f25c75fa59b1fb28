"""The edge-array builders and the large-graph paths equal the networkx / dense ones at small sizes.

The thresholds (``LARGE_FROM``, ``FAST_GNP_FROM``, ``DENSE_MAX_AGENTS``) are lowered with monkeypatch so
that the large path runs on graphs small enough to compare with the old path or with ``eigvalsh``.
"""

from __future__ import annotations

from itertools import combinations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import dpgossip.topology.builders as builders_mod
import dpgossip.topology.mixing as mixing_mod
import dpgossip.topology.network as network_mod
import dpgossip.topology.spectral as spectral_mod
from dpgossip.errors import ConfigError
from dpgossip.topology import make_network
from dpgossip.topology.builders import build_graph
from dpgossip.topology.edges import _pair_of_index, adjacency_csr, gnp_edges
from dpgossip.topology.mixing import metropolis_weights, mixing_matrix
from dpgossip.topology.spectral import (
    _bottom,
    _dense_summary,
    _lanczos_summary,
    anderson_morley_lower,
)


def _large_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builders_mod, "LARGE_FROM", 5)
    monkeypatch.setattr(builders_mod, "FAST_GNP_FROM", 5)


def _same_graph(a: nx.Graph, b: nx.Graph) -> None:
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))
    assert list(a.edges(data=True)) == list(b.edges(data=True))
    assert a.graph == b.graph
    for u in a:  # neighbour order too (it sets the order of every later iteration)
        assert list(a.adj[u]) == list(b.adj[u])


@pytest.mark.parametrize("name,m,params", [("ring", 57, {}), ("random_geometric", 300, {}),
                                           ("random_geometric", 200, {"radius": 0.3})])
def test_edge_array_builders_equal_networkx(monkeypatch, name, m, params):
    old = build_graph(name, m, seed=7, params=params)
    _large_path(monkeypatch)
    new = build_graph(name, m, seed=7, params=params)
    _same_graph(old, new)


def test_random_geometric_retries_like_networkx(monkeypatch):
    # a radius at which most samples are disconnected: both paths must redraw the same seeds
    old = build_graph("random_geometric", 60, seed=3, params={"radius": 0.16})
    _large_path(monkeypatch)
    _same_graph(old, build_graph("random_geometric", 60, seed=3, params={"radius": 0.16}))
    with pytest.raises(ConfigError, match="disconnected graph in all 2 samples"):
        build_graph("random_geometric", 60, seed=3, params={"radius": 0.01, "max_tries": 2})


def test_pair_of_index_is_row_major_upper_triangle():
    for m in (2, 3, 7, 50):
        k = np.arange(m * (m - 1) // 2)
        assert _pair_of_index(k, m).tolist() == [list(p) for p in combinations(range(m), 2)]
    m = 1_000_000  # float rounding near row starts at a large m
    starts = np.array([i * (2 * m - i - 1) // 2 for i in (0, 1, 499_999, m - 2)])
    for s, i in zip(starts, (0, 1, 499_999, m - 2), strict=True):
        got = _pair_of_index(np.array([s, s - 1 if s else 0]), m)
        assert got[0].tolist() == [i, i + 1]
        if s:
            assert got[1].tolist() == [i - 1, m - 1]


def test_gnp_edges_sample():
    rng = np.random.default_rng(5)
    assert gnp_edges(6, 1.0, rng).tolist() == [list(p) for p in combinations(range(6), 2)]
    assert gnp_edges(6, 0.0, rng).shape == (0, 2)
    counts = [len(gnp_edges(40, 0.25, np.random.default_rng(s))) for s in range(200)]
    # Binomial(780, 0.25): mean 195, sd 12.1; the mean of 200 draws is within 0.86 (1 sd) of it
    assert abs(np.mean(counts) - 195) < 3.0
    e = gnp_edges(300, 0.05, np.random.default_rng(1))
    assert np.all(e[:, 0] < e[:, 1]) and len(np.unique(e, axis=0)) == len(e)


def test_erdos_renyi_large_path(monkeypatch):
    _large_path(monkeypatch)
    g = build_graph("erdos_renyi", 200, seed=2)
    assert nx.is_connected(g) and list(g.nodes) == list(range(200))
    assert list(g.edges) == sorted(g.edges)
    _same_graph(g, build_graph("erdos_renyi", 200, seed=2))


@pytest.mark.parametrize("graph", [nx.karate_club_graph(), nx.cycle_graph(9), nx.path_graph(5)])
def test_adjacency_csr(graph):
    g = nx.Graph()
    g.add_nodes_from(sorted(graph.nodes, reverse=True))  # insertion order must not matter
    g.add_edges_from(graph.edges)
    g.add_edge(2, 2)
    expected = nx.to_scipy_sparse_array(g, nodelist=range(len(g)), weight=None, format="csr")
    np.testing.assert_array_equal(adjacency_csr(g).toarray(), expected.toarray())


def test_large_paths_of_mixing_and_network(monkeypatch):
    g = build_graph("random_geometric", 150, seed=4)
    W_old = mixing_matrix(g, "metropolis")
    net_old = make_network("random_geometric", agents=150, seed=4)
    monkeypatch.setattr(mixing_mod, "DENSE_MAX_AGENTS", 10)
    monkeypatch.setattr(network_mod, "LARGE_FROM", 10)
    for rule in ("metropolis", "lazy_metropolis", "max_degree"):
        monkeypatch.setattr(mixing_mod, "DENSE_MAX_AGENTS", 1000)
        dense = mixing_matrix(g, rule).toarray()
        monkeypatch.setattr(mixing_mod, "DENSE_MAX_AGENTS", 10)
        np.testing.assert_allclose(mixing_matrix(g, rule).toarray(), dense, rtol=0, atol=1e-15)
    np.testing.assert_allclose(metropolis_weights(g).toarray(), W_old.toarray(), atol=1e-15)
    net = make_network("random_geometric", agents=150, seed=4)
    assert net.neighbours == net_old.neighbours


GRAPHS = {"rgg": build_graph("random_geometric", 300, seed=1),
          "er": build_graph("erdos_renyi", 300, seed=1),
          "ring": nx.cycle_graph(300), "path": nx.path_graph(200),
          "star": nx.star_graph(40), "karate": nx.karate_club_graph()}


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("rule", ["metropolis", "lazy_metropolis", "max_degree"])
def test_anderson_morley_bound_below_lambda_min(name, rule):
    W = mixing_matrix(GRAPHS[name], rule)
    lam = np.linalg.eigvalsh(W.toarray())
    b = anderson_morley_lower(W)
    assert b is not None and b <= lam[0] + 1e-12


def test_anderson_morley_needs_nonnegative_weights():
    W = sp.csr_array(np.array([[1.2, -0.2], [-0.2, 1.2]]))
    assert anderson_morley_lower(W) is None


def _ring(m: int) -> sp.csr_array:
    return mixing_matrix(nx.cycle_graph(m), "max_degree")  # W = I/3 + A/3


def test_bottom_bound_certifies_slem(monkeypatch):
    monkeypatch.setattr(spectral_mod, "PLAIN_MAXITER", 1)  # a long ring: plain Lanczos fails
    W = mixing_matrix(nx.cycle_graph(401), "metropolis")
    dense, lanczos = _dense_summary(W.toarray(), 1e-6), _lanczos_summary(W, 1e-6)
    assert not lanczos.lambda_min_exact and lanczos.lambda_min <= dense.lambda_min
    assert lanczos.slem == pytest.approx(dense.slem, abs=1e-10)


def test_bottom_shift_invert_when_banded(monkeypatch):
    monkeypatch.setattr(spectral_mod, "PLAIN_MAXITER", 1)
    W = _ring(401)
    lo, exact = _bottom(W, lam_2=0.0)  # no certificate: |lambda_m| may exceed 0
    assert exact
    assert lo.values[0] == pytest.approx(np.linalg.eigvalsh(W.toarray())[0], abs=1e-10)


def test_bottom_loose_lanczos(monkeypatch):
    monkeypatch.setattr(spectral_mod, "PLAIN_MAXITER", 1)
    monkeypatch.setattr(spectral_mod, "BANDED_LU_MAX", 0)
    W = _ring(201)
    lo, exact = _bottom(W, lam_2=0.0)
    lam = np.linalg.eigvalsh(W.toarray())[0]
    assert exact and abs(lo.values[0] - lam) <= max(lo.error_bound, 1e-12)
    assert abs(lo.values[0] - lam) < spectral_mod.LOOSE_TOL
