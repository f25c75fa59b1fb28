"""Checks of a communication graph and its mixing matrix (Assumption 2 of 001).

A valid mixing matrix ``W`` for a connected graph ``G = (V, E)`` on agents ``0..m-1`` satisfies

* ``W`` is ``m x m``, finite and symmetric, ``W = W^T``;
* ``W_ij >= 0`` for all ``i, j``;
* ``W 1 = 1`` and ``1^T W = 1^T`` (doubly stochastic);
* ``W_ij = 0`` exactly whenever ``i != j`` and ``{i, j}`` is not in ``E``: an agent can only
  receive from its neighbours, so any weight off an edge would be silently dropped by a gossip
  implementation and the simulated protocol would no longer be the one ``W`` describes;
* the second largest eigenvalue modulus ``SLEM = ||W - 11^T/m||_2 < 1``, which for a symmetric
  doubly stochastic ``W`` is equivalent to ``W^t -> 11^T/m`` (average consensus).

Every failure raises :class:`~dpgossip.errors.ConfigError` naming the offending entry.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from dpgossip.errors import ConfigError

__all__ = ["check_graph", "validate_mixing"]


def check_graph(graph: nx.Graph, *, field: str = "graph") -> None:
    """Check that ``graph`` is a connected simple undirected graph on nodes ``0..m-1``, ``m >= 2``.

    Parameters
    ----------
    graph : networkx.Graph
        The communication graph. Directed graphs and multigraphs are rejected; self-loops are
        rejected too (self-weights belong on the diagonal of ``W``, not in the graph).
    field : str
        Parameter named in error messages (:func:`~dpgossip.topology.make_network` passes
        ``topology``).

    Raises
    ------
    ConfigError
        On a wrong graph type, wrong node labels, fewer than 2 nodes, a self-loop, or a
        disconnected graph (the message gives the number of components and one node of a
        second component).
    """
    if not isinstance(graph, nx.Graph):
        raise ConfigError(f"{field}: expected a networkx.Graph, got {type(graph).__name__}",
                          field=field)
    if graph.is_directed() or graph.is_multigraph():
        kind = "directed" if graph.is_directed() else "multi"
        raise ConfigError(f"{field}: the graph is a {kind}graph; the communication graph must be "
                          "a simple undirected graph", field=field)
    m = graph.number_of_nodes()
    if m < 2:
        raise ConfigError(f"{field}: the graph has {m} node(s); a graph needs at least 2 agents",
                          field=field)
    nodes = set(graph.nodes)
    expected = set(range(m))
    if nodes != expected:
        bad = sorted((u for u in nodes if u not in expected), key=repr)
        raise ConfigError(f"{field}: nodes must be the integers 0..{m - 1}; found node "
                          f"{bad[0]!r} (relabel with dpgossip.topology.builders.canonical_graph)",
                          field=field)
    loops = list(nx.selfloop_edges(graph))
    if loops:
        u = loops[0][0]
        raise ConfigError(f"{field}: self-loop at node {u!r}; self-weights belong on the diagonal "
                          "of W, not in the graph", field=field)
    if not nx.is_connected(graph):
        comps = sorted((sorted(c) for c in nx.connected_components(graph)), key=lambda c: c[0])
        raise ConfigError(f"{field}: the graph is disconnected: {len(comps)} components "
                          f"(node 0 and node {comps[1][0]} are in different components); "
                          "average consensus needs a connected graph", field=field)


def validate_mixing(graph: nx.Graph, W: np.ndarray, *, tol: float = 1e-12,
                    field: str = "W") -> None:
    """Check that ``W`` is a valid mixing matrix for ``graph`` (see the module docstring).

    Parameters
    ----------
    graph : networkx.Graph
        Connected graph on nodes ``0..m-1`` (checked with :func:`check_graph`).
    W : array_like, shape (m, m)
        Candidate mixing matrix.
    tol : float
        Tolerance for symmetry ``|W_ij - W_ji| <= tol``, nonnegativity ``W_ij >= -tol``, the row
        and column sums ``|sum_j W_ij - 1| <= tol``, and the spectral condition
        ``SLEM <= 1 - tol``. Entries off the edges must be exactly zero.
    field : str
        Parameter named in error messages (:func:`~dpgossip.topology.make_network` passes
        ``topology`` for a file's own ``W``, ``mixing`` for a computed one).

    Raises
    ------
    ConfigError
        For the first violated condition, naming the worst entry, row or pair.
    """
    check_graph(graph, field=field)
    m = graph.number_of_nodes()
    try:
        W = np.asarray(W, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{field}: W is not a numeric matrix ({exc})", field=field) from None
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ConfigError(f"{field}: W must be a square matrix, got shape {W.shape}", field=field)
    if W.shape[0] != m:
        raise ConfigError(f"{field}: W is {W.shape[0]} x {W.shape[1]} but the graph has {m} "
                          f"nodes; W must be {m} x {m}", field=field)
    if not np.all(np.isfinite(W)):
        i, j = np.argwhere(~np.isfinite(W))[0]
        raise ConfigError(f"{field}: W[{i}, {j}] = {float(W[i, j])} is not finite", field=field)
    asym = np.abs(W - W.T)
    if asym.max() > tol:
        i, j = np.unravel_index(int(np.argmax(asym)), asym.shape)
        wij, wji = float(W[i, j]), float(W[j, i])
        raise ConfigError(f"{field}: W is not symmetric: W[{i}, {j}] = {wij!r} but "
                          f"W[{j}, {i}] = {wji!r} (difference {abs(wij - wji):.3g} > tol {tol:g})",
                          field=field)

    if W.min() < -tol:
        i, j = np.unravel_index(int(np.argmin(W)), W.shape)
        raise ConfigError(f"{field}: W has a negative entry W[{i}, {j}] = {float(W[i, j])!r}; "
                          "a mixing matrix must be nonnegative", field=field)

    for axis, what in ((1, "row"), (0, "column")):
        sums = W.sum(axis=axis)
        err = np.abs(sums - 1.0)
        if err.max() > tol:
            k = int(np.argmax(err))
            total = float(sums[k])
            raise ConfigError(f"{field}: W is not doubly stochastic: {what} {k} sums to {total!r} "
                              f"(|sum - 1| = {err[k]:.3g} > tol {tol:g}); every row and column "
                              "must sum to 1", field=field)

    adjacency = nx.to_numpy_array(graph, nodelist=range(m), weight=None, dtype=bool)
    off_edge = (W != 0) & ~adjacency & ~np.eye(m, dtype=bool)
    if off_edge.any():
        i, j = np.argwhere(off_edge)[0]
        wij = float(W[i, j])
        raise ConfigError(f"{field}: W[{i}, {j}] = {wij!r} but ({i}, {j}) is not an edge of the "
                          "graph; weights are allowed only on edges and the diagonal", field=field)

    eig = np.linalg.eigvalsh((W + W.T) / 2.0 - np.full((m, m), 1.0 / m))
    slem = float(np.max(np.abs(eig)))
    if slem >= 1.0 - tol:
        lam = np.linalg.eigvalsh((W + W.T) / 2.0)
        if lam[0] <= -1.0 + tol:
            why = ("W has eigenvalue -1: the weighted graph is bipartite with a zero diagonal "
                   "(periodic), e.g. W = A/d on an even ring; add self-weights (lazy mixing)")
        else:
            why = ("W has eigenvalue 1 more than once: the edges with nonzero weight do not "
                   "connect the graph")
        raise ConfigError(f"{field}: SLEM = {slem:.12g} >= 1, so gossip does not converge to the "
                          f"average; {why}", field=field)
