"""validate_mixing / check_graph: every violated condition is reported with the offending value."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.topology import check_graph, validate_mixing

RING4 = nx.cycle_graph(4)
PAPER_W = np.array([[.5, .25, 0, .25], [.25, .5, .25, 0], [0, .25, .5, .25], [.25, 0, .25, .5]])


def test_paper_matrix_is_valid():
    validate_mixing(RING4, PAPER_W)


def test_disconnected_graph_names_components_and_a_node():
    g = nx.Graph([(0, 1), (2, 3)])
    W = np.kron(np.eye(2), np.full((2, 2), 0.5))
    with pytest.raises(ConfigError, match=r"disconnected: 2 components \(node 0 and node 2"):
        validate_mixing(g, W)
    with pytest.raises(ConfigError, match=r"3 components"):
        check_graph(nx.Graph([(0, 1), (2, 3), (4, 5)]))


def test_not_doubly_stochastic_names_row_and_sum():
    W = PAPER_W.copy()
    W[2, 2] = 0.6  # row 2 sums to 1.1
    with pytest.raises(ConfigError, match=r"not doubly stochastic: row 2 sums to 1\.1"):
        validate_mixing(RING4, W)


def test_weight_off_an_edge_names_pair_and_weight():
    W = PAPER_W.copy()
    # (0, 2) is a diagonal of the square, not an edge; keep W symmetric and stochastic
    W[0, 2] = W[2, 0] = 0.125
    W[0, 0] = W[2, 2] = 0.375
    with pytest.raises(ConfigError, match=r"W\[0, 2\] = 0\.125 but \(0, 2\) is not an edge"):
        validate_mixing(RING4, W)
    W[0, 2] = W[2, 0] = 1e-300  # off-edge entries must be exactly zero
    W[0, 0] = W[2, 2] = 0.5
    with pytest.raises(ConfigError, match=r"not an edge"):
        validate_mixing(RING4, W)


def test_negative_weight():
    g = nx.complete_graph(3)
    W = np.array([[1.2, -0.1, -0.1], [-0.1, 0.55, 0.55], [-0.1, 0.55, 0.55]])
    with pytest.raises(ConfigError, match=r"negative entry W\[0, 1\] = -0\.1"):
        validate_mixing(g, W)


def test_asymmetric():
    W = PAPER_W.copy()
    W[0, 1], W[0, 3] = 0.3, 0.2  # row 0 still sums to 1
    with pytest.raises(ConfigError, match=r"not symmetric: W\[0, 1\] = 0\.3 but W\[1, 0\] = 0\.25"):
        validate_mixing(RING4, W)


def test_shape_and_finiteness():
    with pytest.raises(ConfigError, match=r"W is 3 x 3 but the graph has 4 nodes"):
        validate_mixing(RING4, np.eye(3))
    with pytest.raises(ConfigError, match=r"square matrix, got shape \(4, 3\)"):
        validate_mixing(RING4, np.ones((4, 3)))
    W = PAPER_W.copy()
    W[1, 1] = np.nan
    with pytest.raises(ConfigError, match=r"W\[1, 1\] = nan is not finite"):
        validate_mixing(RING4, W)


def test_slem_one_periodic_and_zero_weight_bridge():
    # even ring with W = A/2: eigenvalue -1 (alternating vector), so no convergence
    with pytest.raises(ConfigError, match=r"SLEM = 1 >= 1.*eigenvalue -1.*bipartite"):
        validate_mixing(RING4, nx.to_numpy_array(RING4) / 2)
    # path 0-1-2 with zero weight on edge (0, 1): W = diag(1, J/2) has eigenvalue 1 twice
    W = np.array([[1, 0, 0], [0, .5, .5], [0, .5, .5]])
    with pytest.raises(ConfigError, match=r"SLEM = 1 >= 1.*do not connect"):
        validate_mixing(nx.path_graph(3), W)


def test_check_graph_labels_loops_and_types():
    with pytest.raises(ConfigError, match=r"nodes must be the integers 0\.\.1; found node 'a'"):
        check_graph(nx.Graph([("a", "b")]))
    with pytest.raises(ConfigError, match=r"self-loop at node 1"):
        check_graph(nx.Graph([(0, 1), (1, 1)]))
    with pytest.raises(ConfigError, match=r"directed"):
        check_graph(nx.DiGraph([(0, 1)]))
    with pytest.raises(ConfigError, match=r"at least 2 agents"):
        check_graph(nx.empty_graph(1))
    with pytest.raises(ConfigError, match=r"^graph: .*disconnected"):
        check_graph(nx.empty_graph(2))
    with pytest.raises(ConfigError, match=r"^topology: .*disconnected") as caught:
        check_graph(nx.empty_graph(2), field="topology")
    assert caught.value.field == "topology"


def test_tolerance_is_respected():
    W = PAPER_W.copy()
    W[0, 0] += 1e-13  # row 0 sums to 1 + 1e-13: inside the default tol
    validate_mixing(RING4, W)
    with pytest.raises(ConfigError, match=r"row 0 sums to"):
        validate_mixing(RING4, W, tol=1e-14)
