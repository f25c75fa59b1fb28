"""The consensus matrix Xi of 001, Eq. (13), and its leading eigenvalues.

``Xi = D(X) (m (W^c (x) I_d)) D(X)^T``: block ``(i, j)`` is ``m (W^c)_{ij} X_i X_j^T``. It is the matrix the
decentralized power iteration actually multiplies by (``q^(t) = alpha Xi q^(t-1) + p^(t)``), and it tends to
``X X^T`` as ``c`` grows (Eq. (14)).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from dpgossip.data.partition import PartitionedData
from dpgossip.topology.spectral import extreme_eigenvalues

__all__ = ["xi_matrix", "xi_apply", "xi_eigenvalues"]

_DENSE_LIMIT = 2500


def xi_matrix(
    data: PartitionedData, W: np.ndarray, c: int, X: np.ndarray | None = None
) -> np.ndarray:
    """Dense ``Xi = m D (W^c (x) I) D^T`` (Eq. (13) of 001), ``n x n``.

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


def xi_eigenvalues(
    data: PartitionedData, W: np.ndarray, c: int, k: int = 2, X: np.ndarray | None = None
) -> np.ndarray:
    """The ``k`` eigenvalues of ``Xi`` of largest modulus, ordered by decreasing modulus.

    ``Xi`` is symmetric (``W`` is), but may be indefinite when ``W^c`` has negative eigenvalues; the power
    method's rate is set by moduli, so ``mu_1 = |lambda|_max`` and ``mu_2`` the next modulus.

    Up to ``n = 2500`` rows: dense ``eigvalsh`` of :func:`xi_matrix`. Above: Lanczos on the operator
    :func:`xi_apply` (``c`` sparse products with ``W`` per application, ``O(c |E| d + n d)``), the ``k + 2``
    eigenvalues of largest modulus with the fixed start vector and tolerance of
    :func:`dpgossip.topology.spectral.extreme_eigenvalues` (``RuntimeError`` if it does not converge).
    """
    n = data.n
    k = min(k, n)
    if n <= _DENSE_LIMIT:
        ev = np.linalg.eigvalsh(xi_matrix(data, W, c, X))
    else:
        op = spla.LinearOperator(
            (n, n), matvec=lambda v: xi_apply(data, W, c, np.ravel(v), X), dtype=float
        )
        ev = extreme_eigenvalues(op, min(k + 2, n - 1), "LM", "the consensus matrix Xi").values
    ev = ev[np.argsort(-np.abs(ev))]
    return np.abs(ev[:k])
