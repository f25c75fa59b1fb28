"""Checks of a communication graph and its mixing matrix (Assumption 2 of Campbell et al.).

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
import scipy.sparse as sp
from scipy.sparse import csgraph

from dpgossip.errors import ConfigError
from dpgossip.topology.edges import adjacency_csr
from dpgossip.topology.matrices import DENSE_MAX_AGENTS, as_csr

__all__ = ["check_graph", "validate_mixing", "validate_network"]


def check_graph(graph: nx.Graph, *, field: str = "graph") -> None:
    """Check that ``graph`` is a connected simple undirected graph on nodes ``0..m-1``, ``m >= 2``
    (see :func:`_check_graph`)."""
    _check_graph(graph, field=field)


def _check_graph(graph: nx.Graph, *, field: str = "graph", min_nodes: int = 2) -> sp.csr_array:
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
    if m < min_nodes:
        raise ConfigError(f"{field}: the graph has {m} node(s); a graph needs at least {min_nodes} "
                          f"agent{'s' if min_nodes != 1 else ''}", field=field)
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
    adjacency = adjacency_csr(graph)
    n_comps, label = csgraph.connected_components(adjacency, directed=False)
    if n_comps > 1:  # the smallest node outside node 0's component
        other = int(np.argmax(label != label[0]))
        raise ConfigError(f"{field}: the graph is disconnected: {n_comps} components "
                          f"(node 0 and node {other} are in different components); "
                          "average consensus needs a connected graph", field=field)
    return adjacency


def _as_matrix(W: object, m: int, field: str) -> sp.csr_array:
    """``W`` (dense or sparse) as a float CSR array of shape ``(m, m)`` with finite entries."""
    try:
        A = W if sp.issparse(W) else np.asarray(W)
        if A.dtype.kind not in "biuf":
            raise TypeError(f"entries of dtype {A.dtype}; expected real numbers")
        A = A if sp.issparse(A) else A.astype(float, copy=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{field}: W is not a numeric matrix ({exc})", field=field) from None
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ConfigError(f"{field}: W must be a square matrix, got shape {A.shape}", field=field)
    A = as_csr(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ConfigError(f"{field}: W must be a square matrix, got shape {A.shape}", field=field)
    if A.shape[0] != m:
        raise ConfigError(f"{field}: W is {A.shape[0]} x {A.shape[1]} but the graph has {m} "
                          f"nodes; W must be {m} x {m}", field=field)
    bad = ~np.isfinite(A.data)
    if bad.any():
        k = int(np.argmax(bad))
        i, j = _coords(A, k)
        raise ConfigError(f"{field}: W[{i}, {j}] = {float(A.data[k])} is not finite", field=field)
    return A


def _coords(A: sp.csr_array, k: int) -> tuple[int, int]:
    """Row and column of the ``k``-th stored entry of a CSR array."""
    return int(np.searchsorted(A.indptr, k, side="right") - 1), int(A.indices[k])


def _check_symmetric(A: sp.csr_array, tol: float, field: str) -> None:
    """``max |W_ij - W_ji| <= tol`` over the stored entries of ``W - W^T``."""
    D = as_csr(A - A.T)
    if D.nnz and np.max(np.abs(D.data)) > tol:
        k = int(np.argmax(np.abs(D.data)))
        i, j = _coords(D, k)
        wij, wji = float(A[i, j]), float(A[j, i])
        raise ConfigError(f"{field}: W is not symmetric: W[{i}, {j}] = {wij!r} but "
                          f"W[{j}, {i}] = {wji!r} (difference {abs(wij - wji):.3g} > tol {tol:g})",
                          field=field)


def _check_entries(A: sp.csr_array, adjacency: sp.csr_array, tol: float, field: str) -> None:
    """Nonnegative entries; rows and columns summing to one; nonzeros only on edges and the diagonal."""
    if A.nnz and A.data.min() < -tol:
        k = int(np.argmin(A.data))
        i, j = _coords(A, k)
        raise ConfigError(f"{field}: W has a negative entry W[{i}, {j}] = {float(A.data[k])!r}; "
                          "a mixing matrix must be nonnegative", field=field)
    for axis, what in ((1, "row"), (0, "column")):
        sums = np.asarray(A.sum(axis=axis)).ravel()
        err = np.abs(sums - 1.0)
        if err.max() > tol:
            k = int(np.argmax(err))
            raise ConfigError(f"{field}: W is not doubly stochastic: {what} {k} sums to "
                              f"{float(sums[k])!r} (|sum - 1| = {err[k]:.3g} > tol {tol:g}); "
                              "every row and column must sum to 1", field=field)
    _check_support(A, adjacency, field)


def _check_support(A: sp.csr_array, adjacency: sp.csr_array, field: str) -> None:
    """Nonzero weights only on the edges of the graph and the diagonal."""
    pattern = A.copy()
    pattern.data = np.ones_like(pattern.data)
    off = as_csr(pattern - pattern.multiply(adjacency) - sp.diags_array(pattern.diagonal()))
    if off.nnz:
        i, j = _coords(off, 0)
        raise ConfigError(f"{field}: W[{i}, {j}] = {float(A[i, j])!r} but ({i}, {j}) is not an "
                          "edge of the graph; weights are allowed only on edges and the diagonal",
                          field=field)


def _raise_slem(slem: str, periodic: bool, field: str) -> None:
    """Raise the SLEM error: eigenvalue -1 (``periodic``) or eigenvalue 1 repeated."""
    if periodic:
        why = ("W has eigenvalue -1: the weighted graph is bipartite with a zero diagonal "
               "(periodic), e.g. W = A/d on an even ring; add self-weights (lazy mixing)")
    else:
        why = ("W has eigenvalue 1 more than once: the edges with nonzero weight do not "
               "connect the graph")
    raise ConfigError(f"{field}: SLEM = {slem} >= 1, so gossip does not converge to the "
                      f"average; {why}", field=field)


def _check_spectrum(A: sp.csr_array, tol: float, field: str,
                    dense_max: int = DENSE_MAX_AGENTS) -> None:
    """``SLEM < 1 - tol``: dense eigenvalues up to ``DENSE_MAX_AGENTS`` agents, else combinatorial.

    For a symmetric, nonnegative, doubly stochastic ``W`` (already checked), Perron-Frobenius gives
    ``SLEM < 1`` exactly when the graph of the positive off-diagonal weights is connected (eigenvalue
    1 simple) and is not bipartite with a zero diagonal (no eigenvalue -1). Above the dense size this
    ``O(|E|)`` test replaces the eigenvalues (weights within ``tol`` of zero count as absent); the
    SLEM itself is then reported by :func:`~dpgossip.topology.spectral.spectral_summary` (Lanczos).
    """
    m = A.shape[0]
    if m <= dense_max:
        W = A.toarray()
        slem = float(np.max(np.abs(np.linalg.eigvalsh((W + W.T) / 2.0
                                                      - np.full((m, m), 1.0 / m)))))
        if slem >= 1.0 - tol:
            lam = np.linalg.eigvalsh((W + W.T) / 2.0)
            _raise_slem(f"{slem:.12g}", bool(lam[0] <= -1.0 + tol), field)
        return
    support = abs(A - sp.diags_array(A.diagonal())) > tol
    if csgraph.connected_components(support, directed=False)[0] > 1:
        _raise_slem("1", False, field)
    if np.all(A.diagonal() <= tol) and _bipartite(support):
        _raise_slem("1", True, field)


def _bipartite(support: sp.csr_array) -> bool:
    """Whether the (connected) graph with adjacency ``support`` is bipartite: BFS 2-colouring."""
    order, pred = csgraph.breadth_first_order(support, 0, directed=False)
    depth = np.zeros(support.shape[0], dtype=np.int64)
    for v in order[1:]:
        depth[v] = depth[pred[v]] + 1
    coo = support.tocoo()
    return bool(np.all((depth[coo.row] + depth[coo.col]) % 2 == 1))


def validate_mixing(graph: nx.Graph, W: np.ndarray | sp.sparray, *, tol: float = 1e-12,
                    field: str = "W") -> None:
    """Check that ``W`` is a valid mixing matrix for ``graph`` (see the module docstring).

    Every check but the spectral one runs on the stored entries of a CSR copy of ``W``, in
    ``O(|E| + m)``. The spectral one (``SLEM <= 1 - tol``) is dense up to
    :data:`~dpgossip.topology.matrices.DENSE_MAX_AGENTS` agents and combinatorial above (connected
    support, not bipartite with a zero diagonal; see :func:`_check_spectrum`).

    Parameters
    ----------
    graph : networkx.Graph
        Connected graph on nodes ``0..m-1`` (checked with :func:`check_graph`).
    W : array_like or scipy sparse matrix, shape (m, m)
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
    adjacency = _check_graph(graph, field=field)
    A = _as_matrix(W, graph.number_of_nodes(), field)
    _check_symmetric(A, tol, field)
    _check_entries(A, adjacency, tol, field)
    _check_spectrum(A, tol, field)


def validate_network(graph: object, W: object, *, allow_nonstochastic: bool = False,
                     tol: float = 1e-12) -> tuple[sp.csr_array, bool]:
    """The checks of :class:`~dpgossip.topology.network.Network`: ``graph`` and ``W`` as given.

    Always: ``graph`` is a connected simple undirected graph on ``0..m-1``, ``m >= 1`` (one agent is
    the centralized power method; errors name ``graph``);
    ``W`` is a finite numeric ``m x m`` matrix with weights only on edges and the diagonal (errors
    name ``W``). Then the averaging conditions of :func:`validate_mixing` (symmetric, nonnegative,
    doubly stochastic, SLEM < 1): a failure raises unless ``allow_nonstochastic``, for weights that a
    protocol other than D-DP-PM needs (row-normalised, push-sum, a star of clients).

    Returns
    -------
    (csr_array, bool)
        ``W`` as a CSR array, and whether it meets the averaging conditions.
    """
    if not isinstance(allow_nonstochastic, bool):
        raise ConfigError(f"allow_nonstochastic must be True or False, got {allow_nonstochastic!r}",
                          field="allow_nonstochastic")
    adjacency = _check_graph(graph, field="graph", min_nodes=1)  # type: ignore[arg-type]
    A = _as_matrix(W, adjacency.shape[0], "W")
    _check_support(A, adjacency, "W")
    try:
        _check_symmetric(A, tol, "W")
        _check_entries(A, adjacency, tol, "W")
        # allowed weights (a star of clients, ...) only need the O(|E|) test to be told apart
        _check_spectrum(A, tol, "W", dense_max=0 if allow_nonstochastic else DENSE_MAX_AGENTS)
    except ConfigError as exc:
        if not allow_nonstochastic:
            raise ConfigError(f"{exc}; D-DP-PM needs a symmetric doubly-stochastic W with SLEM < 1 "
                              "(dpgossip.topology.make_network computes one; pass "
                              "allow_nonstochastic=True only for a protocol that uses other "
                              "weights)", field="W") from None
        return A, False
    return A, True
