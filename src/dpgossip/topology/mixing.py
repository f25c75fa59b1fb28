"""Mixing-matrix rules: symmetric doubly-stochastic weights supported on a graph's edges.

Notation: ``G = (V, E)`` connected on ``0..m-1``, ``d_i`` the degree of ``i``, ``A`` the adjacency
matrix, ``L = D - A`` the Laplacian with eigenvalues ``lambda_1(L) >= ... >= lambda_{m-1}(L) >
lambda_m(L) = 0`` (Xiao & Boyd's ordering), ``J = 11^T``. Every rule returns a symmetric ``W`` with
``W 1 = 1`` and ``W_ij = 0`` off the edges; the diagonal is always filled last as
``W_ii = 1 - sum_{j != i} W_ij`` so each row sums to one to rounding error.

Rules
-----
``metropolis``
    ``W_ij = 1 / (1 + max(d_i, d_j))`` for ``{i, j}`` in ``E``. Nonnegative diagonal, always valid.
``lazy_metropolis``
    ``(I + W_MH) / 2``: all eigenvalues in ``[0, 1]``.
``max_degree``
    ``W = I - L / (d_max + 1)``. The ``+ 1`` matters: with ``I - L / d_max`` a ``d``-regular
    bipartite graph (e.g. an even ring) gets ``W = A / d`` with zero diagonal, whose eigenvalue
    ``-1`` (eigenvector: +1 on one side, -1 on the other) gives ``SLEM = 1`` and no convergence.
``best_constant``
    ``W = I - a L`` with ``a = 2 / (lambda_1(L) + lambda_{m-1}(L))``, the constant edge weight
    minimising the SLEM (Xiao & Boyd 2004, Sec. 4.1); then ``SLEM = (lambda_1 - lambda_{m-1}) /
    (lambda_1 + lambda_{m-1})``. The diagonal ``1 - a d_i`` can be **negative** (e.g. the hub of
    a star), and such a ``W`` is rejected by :func:`~dpgossip.topology.validate.validate_mixing`.
``fastest``
    Fastest mixing Markov chain (Boyd, Diaconis & Xiao 2004): the symmetric stochastic ``W >= 0``
    on ``E`` minimising ``SLEM = ||W - J/m||_2``, solved as a semidefinite program with cvxpy
    (optional extra ``dpgossip[fmmc]``). Unlike Xiao & Boyd's fastest *linear iteration* it keeps
    ``W >= 0``, which the project requires, so it is never slower than any other nonnegative rule.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError, did_you_mean
from dpgossip.topology.edges import adjacency_csr, upper_edges
from dpgossip.topology.matrices import DENSE_MAX_AGENTS, as_csr
from dpgossip.topology.spectral import laplacian_extremes
from dpgossip.topology.validate import check_graph

__all__ = [
    "MIXING_RULES",
    "best_constant_weights",
    "fastest_mixing_weights",
    "lazy_metropolis_weights",
    "max_degree_weights",
    "metropolis_weights",
    "mixing_matrix",
]

MIXING_RULES: tuple[str, ...] = (
    "metropolis",
    "lazy_metropolis",
    "max_degree",
    "best_constant",
    "fastest",
)
"""Rules accepted by :func:`mixing_matrix`."""

FMMC_SLEM_TOL = 1e-6
"""Allowed excess of the cleaned ``fastest`` matrix's SLEM over the solver's optimum."""


def _edges(graph: nx.Graph) -> np.ndarray:
    """Edges ``(min, max)`` in the graph's edge order (row-major from the adjacency above
    ``DENSE_MAX_AGENTS`` agents, where the order does not change ``W``)."""
    if graph.number_of_nodes() > DENSE_MAX_AGENTS:
        return upper_edges(adjacency_csr(graph))
    e = np.array([(min(u, v), max(u, v)) for u, v in graph.edges()], dtype=np.int64)
    return e.reshape(-1, 2)


def _sparse_from_edge_weights(m: int, edges: np.ndarray, w: np.ndarray) -> sp.csr_array:
    """``W = I - sum_e w_e (e_i - e_j)(e_i - e_j)^T`` built in ``O(|E| + m)``.

    Off-diagonal ``W_ij = W_ji = w_e``; ``W_ii = 1 - sum_{j != i} W_ij`` summed over the row's stored
    entries (``np.add.reduceat`` over the CSR data).
    """
    rows = np.concatenate((edges[:, 0], edges[:, 1]))
    cols = np.concatenate((edges[:, 1], edges[:, 0]))
    vals = np.concatenate((w, w)).astype(float)
    off = sp.csr_array((vals, (rows, cols)), shape=(m, m))
    off.sum_duplicates()
    off.sort_indices()
    diag = 1.0 - np.add.reduceat(np.append(off.data, 0.0), np.minimum(off.indptr[:-1], off.nnz))
    diag[np.diff(off.indptr) == 0] = 1.0
    return as_csr(off + sp.diags_array(diag, format="csr"))


def _from_edge_weights(m: int, edges: np.ndarray, w: np.ndarray) -> sp.csr_array:
    """Mixing matrix with off-diagonal ``w_e`` on the edges and the diagonal filling each row.

    Up to :data:`~dpgossip.topology.matrices.DENSE_MAX_AGENTS` agents it is built densely (the row sums
    of the original dense construction, so small networks keep their exact weights), above that in
    ``O(|E|)`` by :func:`_sparse_from_edge_weights`; the two agree to rounding (tested).
    """
    if m > DENSE_MAX_AGENTS:
        return _sparse_from_edge_weights(m, edges, w)
    W = np.zeros((m, m))
    W[edges[:, 0], edges[:, 1]] = w
    W[edges[:, 1], edges[:, 0]] = w
    W[np.diag_indices(m)] = 1.0 - W.sum(axis=1)
    return as_csr(W)


def _degrees_edges(graph: nx.Graph) -> tuple[np.ndarray, np.ndarray]:
    """Degrees ``d_i`` (float) and the edge array of :func:`_edges` (one adjacency read when large)."""
    m = graph.number_of_nodes()
    if m > DENSE_MAX_AGENTS:  # no self-loops (check_graph), so the row counts are the degrees
        A = adjacency_csr(graph)
        return np.diff(A.indptr).astype(float), upper_edges(A)
    d = np.fromiter((graph.degree(i) for i in range(m)), dtype=float, count=m)
    return d, _edges(graph)


def metropolis_weights(graph: nx.Graph) -> sp.csr_array:
    """Metropolis-Hastings weights ``W_ij = 1 / (1 + max(d_i, d_j))`` on edges, diagonal fills."""
    d, e = _degrees_edges(graph)
    return _from_edge_weights(len(d), e, 1.0 / (1.0 + np.maximum(d[e[:, 0]], d[e[:, 1]])))


def lazy_metropolis_weights(graph: nx.Graph) -> sp.csr_array:
    """Lazy Metropolis weights ``(I + W_MH) / 2``."""
    d, e = _degrees_edges(graph)
    return _from_edge_weights(len(d), e, 0.5 / (1.0 + np.maximum(d[e[:, 0]], d[e[:, 1]])))


def max_degree_weights(graph: nx.Graph) -> sp.csr_array:
    """Maximum-degree weights ``W = I - L / (d_max + 1)`` (every edge weight ``1/(d_max + 1)``)."""
    d, e = _degrees_edges(graph)
    return _from_edge_weights(len(d), e, np.full(len(e), 1.0 / (d.max() + 1.0)))


def best_constant_weights(graph: nx.Graph) -> sp.csr_array:
    """Best constant edge weight ``W = I - a L``, ``a = 2 / (lambda_1(L) + lambda_{m-1}(L))``.

    ``lambda_1(L)`` is the largest and ``lambda_{m-1}(L)`` the second smallest (algebraic
    connectivity) Laplacian eigenvalue (:func:`~dpgossip.topology.spectral.laplacian_extremes`:
    dense up to ``DENSE_MAX_AGENTS`` agents, Lanczos above). The diagonal may be negative.
    """
    m, e = graph.number_of_nodes(), _edges(graph)
    lam_max, lam_conn = laplacian_extremes(graph)
    a = 2.0 / (lam_max + lam_conn)
    return _from_edge_weights(m, e, np.full(len(e), a))


def _import_cvxpy() -> Any:
    try:
        return importlib.import_module("cvxpy")
    except ImportError:
        raise ConfigError(
            "mixing: rule 'fastest' needs cvxpy, which is not installed; "
            'install it with: pip install "dpgossip[fmmc]"',
            field="mixing"
        ) from None


def fastest_mixing_weights(graph: nx.Graph, *, solver: str | None = None,
                           slem_tol: float = FMMC_SLEM_TOL) -> sp.csr_array:
    """Fastest mixing Markov chain on ``graph`` (Boyd, Diaconis & Xiao 2004).

    Solves the semidefinite program, with one weight ``w_e`` per edge ``e = {i, j}`` and
    ``W(w) = I - sum_e w_e (e_i - e_j)(e_i - e_j)^T`` (symmetric, ``W 1 = 1``, zero off edges)::

        minimise    s
        subject to  -s I <= W(w) - J/m <= s I      (Loewner order)
                    w_e >= 0,   sum_{j ~ i} w_ij <= 1  (i.e. W >= 0 entrywise)

    whose optimum ``s*`` is the smallest SLEM of any symmetric nonnegative stochastic ``W`` on
    the graph. The solution is cleaned: weights are clipped at 0, each edge weight is scaled by
    ``1 / max(1, r_i, r_j)`` with ``r_i = sum_{j ~ i} w_ij`` so the diagonal is nonnegative, the
    matrix is rebuilt symmetric with the diagonal filled so rows sum to one, and its SLEM is
    checked against ``s*`` (``<= s* + slem_tol``).

    The SDP has two ``m x m`` semidefinite blocks; with the default interior-point solver it takes
    well under a second for ``m <= 30`` and grows quickly beyond ``m ~ 50``.

    Parameters
    ----------
    graph : networkx.Graph
        Connected graph on ``0..m-1``.
    solver : str, optional
        cvxpy solver name; default ``CLARABEL`` if installed, else ``SCS``.
    slem_tol : float
        Allowed excess of the cleaned matrix's SLEM over the solver's optimum.

    Raises
    ------
    ConfigError
        If cvxpy (or the chosen solver) is not installed.
    RuntimeError
        If the solver fails or the cleaned matrix is not within ``slem_tol`` of the optimum.
    """
    cp = _import_cvxpy()
    m, e = graph.number_of_nodes(), _edges(graph)
    installed = cp.installed_solvers()
    if solver is None:
        solver = "CLARABEL" if "CLARABEL" in installed else "SCS"
    if solver not in installed:
        raise ConfigError(f"mixing: solver {solver!r} for rule 'fastest' is not "
                          f"installed; installed cvxpy solvers: {', '.join(installed)}",
                          field="mixing")
    B = np.zeros((m, len(e)))  # incidence matrix: column k is e_i - e_j for edge k = {i, j}
    B[e[:, 0], np.arange(len(e))] = 1.0
    B[e[:, 1], np.arange(len(e))] = -1.0
    w = cp.Variable(len(e), nonneg=True)
    s = cp.Variable()
    X = np.eye(m) - np.full((m, m), 1.0 / m) - B @ cp.diag(w) @ B.T
    eye = np.eye(m)
    constraints = [X << s * eye, X >> -s * eye, np.abs(B) @ w <= 1.0]
    problem = cp.Problem(cp.Minimize(s), constraints)
    try:
        problem.solve(solver=solver)
    except cp.error.SolverError as exc:  # pragma: no cover - depends on the solver
        raise RuntimeError(f"fastest mixing: solver {solver} failed: {exc}") from exc
    if problem.status not in ("optimal", "optimal_inaccurate") or w.value is None:
        raise RuntimeError(f"fastest mixing: solver {solver} returned status {problem.status!r}")
    optimum = float(problem.value)

    weights = np.clip(np.asarray(w.value, dtype=float), 0.0, None)
    r = np.zeros(m)
    np.add.at(r, e[:, 0], weights)
    np.add.at(r, e[:, 1], weights)
    weights = weights / np.maximum(1.0, np.maximum(r[e[:, 0]], r[e[:, 1]]))
    W = _from_edge_weights(m, e, weights)
    slem = float(np.max(np.abs(np.linalg.eigvalsh(W.toarray() - np.full((m, m), 1.0 / m)))))
    if slem > optimum + slem_tol:
        raise RuntimeError(f"fastest mixing: cleaned W has SLEM {slem:.10g}, but the solver's "
                           f"optimum is {optimum:.10g} (difference > {slem_tol:g}); try another "
                           "solver")
    return W


_RULES: dict[str, Callable[..., sp.csr_array]] = {
    "metropolis": metropolis_weights,
    "lazy_metropolis": lazy_metropolis_weights,
    "max_degree": max_degree_weights,
    "best_constant": best_constant_weights,
    "fastest": fastest_mixing_weights,
}

_RULE_OPTIONS: dict[str, tuple[str, ...]] = {
    "metropolis": (),
    "lazy_metropolis": (),
    "max_degree": (),
    "best_constant": (),
    "fastest": ("solver", "slem_tol"),
}


def check_rule_name(rule: object, extra: tuple[str, ...] = ()) -> str:
    """Return ``rule`` if it is a known rule (or in ``extra``), else raise ``ConfigError``."""
    known = list(MIXING_RULES) + [x for x in extra if x not in MIXING_RULES]
    if not isinstance(rule, str) or rule not in known:
        hint = did_you_mean(rule, known) if isinstance(rule, str) else ""
        raise ConfigError(f"mixing: unknown mixing rule {rule!r}{hint}; "
                          f"known: {', '.join(known)}", field="mixing")
    return rule


def mixing_matrix(graph: nx.Graph, rule: str, **opts: Any) -> sp.csr_array:
    """Mixing matrix of ``graph`` under ``rule`` (one of :data:`MIXING_RULES`).

    See the module docstring for the formula of each rule. The result is *not* validated (a
    ``best_constant`` matrix may have a negative diagonal); use
    :func:`~dpgossip.topology.validate.validate_mixing` or :func:`~dpgossip.topology.make_network`.

    Parameters
    ----------
    graph : networkx.Graph
        Connected simple graph on nodes ``0..m-1``.
    rule : str
        Mixing rule name.
    **opts
        Rule options: only ``fastest`` has any (``solver``, ``slem_tol``).

    Returns
    -------
    scipy.sparse.csr_array, shape (m, m)
        Symmetric ``W`` with unit row sums and zeros off the edges (``.toarray()`` for a dense copy).
    """
    rule = check_rule_name(rule)
    for key in opts:
        allowed = _RULE_OPTIONS[rule]
        if key not in allowed:
            raise ConfigError(f"mixing: unknown option {key!r} for rule {rule!r}; "
                              f"allowed: {', '.join(allowed) if allowed else 'none'}",
                              field="mixing")
    check_graph(graph)
    if rule == "fastest":  # an SDP over dense m x m matrices: ran into 'out of memory' for 100000
        from dpgossip.resources import check_needs, dense_matrix_needs

        m = graph.number_of_nodes()
        check_needs(dense_matrix_needs(m, f"mixing = 'fastest' on {m} agents"),
                    advice="it solves a semidefinite program over dense m x m matrices; use "
                    "'metropolis' or fewer agents", field="mixing")
    return _RULES[rule](graph, **opts)
