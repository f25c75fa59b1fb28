"""The consensus matrix Xi of Campbell et al., Eq. (13), and its leading eigenvalues.

``Xi = D(X) (m (W^c (x) I_d)) D(X)^T``: block ``(i, j)`` is ``m (W^c)_{ij} X_i X_j^T``. It is the matrix the
decentralized power iteration actually multiplies by (``q^(t) = alpha Xi q^(t-1) + p^(t)``), and it tends to
``X X^T`` as ``c`` grows (Eq. (14)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from dpgossip.data.blocks import block_products, block_projections
from dpgossip.data.partition import PartitionedData
from dpgossip.errors import check_int
from dpgossip.protocols.checks import check_data
from dpgossip.topology.locality import LocalMixing, local_mixing
from dpgossip.topology.spectral import extreme_eigenvalues

__all__ = ["XI_TOL", "XiOperator", "xi_apply", "xi_eigenvalues", "xi_matrix", "xi_operator",
           "xi_start_vector"]

_DENSE_LIMIT = 2500


def xi_matrix(
    data: PartitionedData, W: np.ndarray, c: int, X: np.ndarray | None = None
) -> np.ndarray:
    """Dense ``Xi = m D (W^c (x) I) D^T`` (Eq. (13) of Campbell et al.), ``n x n``.

    ``X`` overrides ``data.X`` (same partition), e.g. for deflated data.
    """
    X = data.X if X is None else X
    Wc = np.linalg.matrix_power(W.toarray() if sp.issparse(W) else np.asarray(W, dtype=float), c)
    owner = data.agent_of_row()
    return data.m * Wc[np.ix_(owner, owner)] * (X @ X.T)


def xi_apply(
    data: PartitionedData, W: np.ndarray, c: int, q: np.ndarray, X: np.ndarray | None = None
) -> np.ndarray:
    """``Xi q`` without forming ``Xi``: ``z = D^T q``, ``c`` mixing rounds, ``m D z``."""
    X = data.X if X is None else X
    Z = np.add.reduceat(X * q[:, None], data.offsets[:-1], axis=0)
    for _ in range(c):
        Z = W @ Z
    return data.m * np.einsum("nd,nd->n", X, Z[data.agent_of_row()])


@dataclass(frozen=True, slots=True, kw_only=True)
class XiOperator:
    """``q -> Xi q`` for fixed data, ``W`` and ``c``, prepared once for many products.

    Computes the same product as :func:`xi_apply`, ``Xi q = m D (W^c (x) I_d) D^T q``, with two changes that
    leave the value unchanged up to rounding and make a product cheaper at large ``m``: the ``c`` gossip
    rounds run on ``W`` relabelled for locality (:class:`~dpgossip.topology.locality.LocalMixing`:
    ``W^c Z = P^T (P W P^T)^c P Z``), and ``D^T q`` and ``D Z`` are the chunked block products of
    :mod:`dpgossip.data.blocks` (no ``n x d`` temporary).

    Attributes
    ----------
    X : ndarray, shape (n, d)
        The data (or its deflated version).
    mixing : LocalMixing
        ``W`` and its relabelling.
    c, m : int
        Gossip rounds and agents.
    offsets : ndarray of int
        Block offsets of the partition.
    """

    X: np.ndarray
    mixing: LocalMixing
    c: int
    m: int
    offsets: np.ndarray

    def apply(self, q: np.ndarray) -> np.ndarray:
        """``Xi q`` (Eq. (13) of Campbell et al.) for ``q`` of length ``n``."""
        Z = block_projections(self.X, np.ravel(q), self.offsets)
        return self.m * block_products(self.X, self.mixing.power(Z, self.c), self.offsets)


def xi_operator(data: PartitionedData, W: np.ndarray, c: int, X: np.ndarray | None = None) -> XiOperator:
    """Prepare :class:`XiOperator` for ``data``, ``W`` (dense or sparse) and ``c`` rounds."""
    X = data.X if X is None else X
    return XiOperator(X=np.asarray(X, dtype=float), mixing=local_mixing(W), c=int(c), m=data.m,
                      offsets=np.asarray(data.offsets))

XI_TOL = 1e-6
"""Relative tolerance of the Lanczos moduli of ``Xi`` above :data:`_DENSE_LIMIT` rows (``eigsh``'s ``tol``:
each Ritz value ``theta`` is within ``XI_TOL |theta|`` of an eigenvalue of ``Xi``; docs/scale.md)."""
XI_NCV = 20
"""Krylov subspace size of that Lanczos run."""


def xi_start_vector(data: PartitionedData, k: int, X: np.ndarray | None = None) -> np.ndarray:
    """Lanczos start vector ``X (v_1 + ... + v_k)`` for the top ``k`` right singular vectors ``v_j`` of ``X``.

    ``Xi -> X X^T`` as ``c`` grows (Eq. (14) of Campbell et al.), whose leading eigenvectors are
    ``X v_j / s_j``; the ``d x d`` eigenproblem of ``X^T X`` costs ``O(n d^2)``. Deterministic (no
    random state).
    """
    X = data.X if X is None else X
    _, V = np.linalg.eigh(X.T @ X)
    v0 = X @ V[:, ::-1][:, :k].sum(axis=1)
    return v0 if np.linalg.norm(v0) > 0 else np.ones(data.n)


def xi_eigenvalues(
    data: PartitionedData, W: np.ndarray, c: int, k: int = 2, X: np.ndarray | None = None,
    *, dense_limit: int | None = None,
) -> np.ndarray:
    """The ``k`` eigenvalues of ``Xi`` of largest modulus, ordered by decreasing modulus.

    ``Xi`` is symmetric (``W`` is), but may be indefinite when ``W^c`` has negative eigenvalues; the power
    method's rate is set by moduli, so ``mu_1 = |lambda|_max`` and ``mu_2`` the next modulus.

    Up to ``n = dense_limit`` rows (default ``_DENSE_LIMIT = 2500``, read at call time): dense ``eigvalsh`` of
    :func:`xi_matrix`. Above: Lanczos
    (``eigsh``, ``'LM'``) on the operator :class:`XiOperator` (``c`` sparse products with the relabelled ``W``
    per application, ``O(c |E| d + n d)``) for the ``k + 1`` eigenvalues of largest modulus, relative
    tolerance :data:`XI_TOL`, :data:`XI_NCV` Lanczos vectors and the start vector :func:`xi_start_vector`
    (``RuntimeError`` if it does not converge).
    """
    n = check_data(data).n
    c, k = check_int(c, "c", 0), min(check_int(k, "k", 1), n)
    if n <= (_DENSE_LIMIT if dense_limit is None else dense_limit):
        ev = np.linalg.eigvalsh(xi_matrix(data, W, c, X))
    else:
        xop = xi_operator(data, W, c, X)
        op = spla.LinearOperator((n, n), matvec=xop.apply, dtype=float)
        kk = min(k + 1, n - 1)
        ev = extreme_eigenvalues(op, kk, "LM", "the consensus matrix Xi", tol=XI_TOL, ncv=XI_NCV,
                                 v0=xi_start_vector(data, kk, X)).values
    ev = ev[np.argsort(-np.abs(ev))]
    return np.abs(ev[:k])
