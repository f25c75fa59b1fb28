"""Large graphs as edge arrays: vectorised samplers, a canonical networkx graph from sorted edges, and the
adjacency of a graph as a CSR array.

Above :data:`LARGE_FROM` agents the builders of :mod:`dpgossip.topology.builders` work on an ``(|E|, 2)``
integer array of edges ``(u, v)``, ``u < v``, and turn it into a networkx graph only once, with the nodes
``0..m-1`` and the edges inserted in sorted order -- exactly the graph that
:func:`~dpgossip.topology.builders.canonical_graph` makes from the same edges. Connectivity is checked on a
CSR adjacency (:func:`scipy.sparse.csgraph.connected_components`, ``O(m + |E|)``) instead of a Python BFS.

* ``ring``: edges ``{i, i + 1 mod m}`` built with numpy.
* ``random_geometric``: the same points as ``networkx.random_geometric_graph(m, r, seed=s)`` (a
  ``random.Random(s)`` drawing ``x`` then ``y`` for node 0, 1, ...) and the same edges (the pairs of
  ``scipy.spatial.cKDTree.query_pairs(r)``, which networkx also uses), so the graph is identical to the
  networkx one (tested), only built without Python-level edge loops.
* ``erdos_renyi``: ``G(m, p)`` sampled as ``K ~ Binomial(N, p)`` edges, ``N = m (m - 1) / 2``, then a
  uniform ``K``-subset of the ``N`` pairs (``Generator.choice(N, K, replace=False)``, Floyd's algorithm,
  ``O(K)`` memory), pair index ``k`` mapped to ``(i, j)`` in row-major order of the upper triangle. This is
  exactly the ``G(m, p)`` distribution: given the number of edges, every edge set of that size is equally
  likely. It draws other graphs than networkx's samplers for the same seed (docs/scale.md).
"""

from __future__ import annotations

import random
from itertools import chain

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

__all__ = ["LARGE_FROM", "adjacency_csr", "connected", "geometric_points", "geometric_edges",
           "gnp_edges", "graph_from_edges", "ring_edges", "upper_edges"]

LARGE_FROM = 1000
"""Above this many agents the ring, random geometric and Erdos-Renyi builders use edge arrays."""


def ring_edges(m: int) -> np.ndarray:
    """Edges ``(i, i + 1)`` for ``i < m - 1`` and ``(0, m - 1)`` of the cycle ``C_m``."""
    i = np.arange(m - 1, dtype=np.int64)
    return np.vstack((np.column_stack((i, i + 1)), [[0, m - 1]]))


def geometric_points(m: int, seed: int) -> np.ndarray:
    """``m`` points in the unit square drawn as networkx draws them: ``random.Random(seed)``, ``x`` then
    ``y`` for node 0, 1, ..., ``m - 1``."""
    r = random.Random(seed)
    return np.array([r.random() for _ in range(2 * m)]).reshape(m, 2)


def geometric_edges(points: np.ndarray, radius: float) -> np.ndarray:
    """Pairs ``(i, j)``, ``i < j``, with ``||p_i - p_j||_2 <= radius`` (``cKDTree.query_pairs``)."""
    from scipy.spatial import cKDTree

    pairs = cKDTree(points).query_pairs(radius, p=2.0, output_type="ndarray")
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def _pair_of_index(k: np.ndarray, m: int) -> np.ndarray:
    """Pair ``(i, j)``, ``i < j``, at row-major position ``k`` of the strict upper triangle of ``m x m``.

    Row ``i`` starts at ``s(i) = i (2m - i - 1) / 2``; ``i`` is the largest with ``s(i) <= k``, found as
    ``floor(((2m - 1) - sqrt((2m - 1)^2 - 8k)) / 2)`` and corrected by one step either way against
    rounding; then ``j = k - s(i) + i + 1``.
    """
    b = 2.0 * m - 1.0
    i = np.floor((b - np.sqrt(b * b - 8.0 * k.astype(float))) / 2.0).astype(np.int64)

    def start(r: np.ndarray) -> np.ndarray:
        return r * (2 * m - r - 1) // 2

    i = np.clip(i, 0, m - 2)
    i -= start(i) > k
    i += start(i + 1) <= k
    return np.column_stack((i, k - start(i) + i + 1))


def gnp_edges(m: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """Edges of a ``G(m, p)`` sample, sorted: ``K ~ Binomial(m(m-1)/2, p)``, then a uniform ``K``-subset of
    the pairs (see the module docstring)."""
    n_pairs = m * (m - 1) // 2
    k = int(rng.binomial(n_pairs, p))
    idx = np.sort(rng.choice(n_pairs, size=k, replace=False, shuffle=False))
    return _pair_of_index(idx.astype(np.int64), m)


def _csr(m: int, edges: np.ndarray) -> sp.csr_array:
    """Symmetric 0/1 adjacency of an edge array."""
    rows = np.concatenate((edges[:, 0], edges[:, 1]))
    cols = np.concatenate((edges[:, 1], edges[:, 0]))
    return sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(m, m))


def connected(m: int, edges: np.ndarray) -> bool:
    """Whether the graph on ``0..m-1`` with these edges is connected (``csgraph``, ``O(m + |E|)``)."""
    return csgraph.connected_components(_csr(m, edges), directed=False)[0] == 1


def graph_from_edges(m: int, edges: np.ndarray, *, name: str | None = None,
                     node_attrs: list[dict] | None = None) -> nx.Graph:
    """The canonical graph on ``0..m-1`` with these edges (``u != v``): nodes inserted in order, each edge
    once as ``(min, max)``, edges in sorted order -- what ``canonical_graph`` makes of the same edges."""
    u, v = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    keep = u != v
    u, v = u[keep], v[keep]
    order = np.lexsort((v, u))
    g = nx.Graph()
    if name is not None:
        g.graph["name"] = name
    if node_attrs is None:
        g.add_nodes_from(range(m))
    else:
        g.add_nodes_from(zip(range(m), node_attrs, strict=True))
    # What add_edges_from does for new attribute-free edges, without its per-edge checks: one shared
    # data dict per edge in both adjacency dicts, in sorted edge order (so each node's neighbours
    # are inserted in ascending order, as add_edges_from would insert them).
    adj = g._adj
    for a, b in zip(u[order].tolist(), v[order].tolist(), strict=True):
        adj[a][b] = adj[b][a] = {}
    return g


def adjacency_csr(graph: nx.Graph) -> sp.csr_array:
    """0/1 adjacency of a graph on nodes ``0..m-1`` as a CSR array (sorted indices, a self-loop as a
    diagonal 1), read from networkx's adjacency in ``O(m + |E|)`` without a per-edge Python call."""
    m = graph.number_of_nodes()
    adj = graph._adj  # networkx's dict of neighbour dicts (read only)
    nodes = np.fromiter(adj, dtype=np.int64, count=m)
    deg = np.fromiter((len(a) for a in adj.values()), dtype=np.int64, count=m)
    cols = np.fromiter(chain.from_iterable(adj.values()), dtype=np.int64, count=int(deg.sum()))
    A = sp.csr_array((np.ones(len(cols)), (np.repeat(nodes, deg), cols)), shape=(m, m))
    A.sum_duplicates()
    A.sort_indices()
    return A


def upper_edges(A: sp.csr_array) -> np.ndarray:
    """Edges ``(i, j)``, ``i < j``, of a symmetric adjacency, in row-major order."""
    coo = sp.triu(A, k=1, format="csr").tocoo()
    return np.column_stack((coo.row, coo.col)).astype(np.int64)
